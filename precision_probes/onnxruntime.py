"""ONNX Runtime: a graph of one MatMul and one Conv (NCHW), run by the execution providers the
notebook's session uses (`providers`)."""
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from common import precision


def probe_graph():
    def tensor(name, rank):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [None] * rank)

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["product"]), helper.make_node("Conv", ["x", "w"], ["convolution"])],
        "precision_probe", [tensor("a", 2), tensor("b", 2), tensor("x", 4), tensor("w", 4)],
        [tensor("product", 2), tensor("convolution", 4)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def measure(run, providers):
    options = ort.SessionOptions()
    options.intra_op_num_threads = run.threads
    session = ort.InferenceSession(probe_graph(), options, providers=providers)
    a, b = precision.matmul_inputs()
    x, w = precision.convolution_inputs()
    product, convolution = session.run(None, {"a": a, "b": b, "x": x, "w": w})
    # One run computes both: each probe returns its half of it.
    return precision.checks(run.task, matmul=lambda *_: product, convolution=lambda *_: convolution)
