"""ONNX Runtime's plain loop, as its performance guide writes it: the notebook's ResNet-50 graph
(random weights) in one InferenceSession with every graph optimisation on and its intra-op pool at
the pinned threads, inputs placed on the session's device once and bound with I/O binding (made
once per batch, outside the loop), so each step is only `run_with_iobinding`."""

import clock

loop = clock.start(("Inference",))  # pins the threads before onnxruntime is imported

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from common import resnet_weights  # noqa: E402

params = loop.params
OPSET = 21  # the notebook's


def resnet50(arrays):
    """The notebook's graph: Keras-named Conv (+bias) and inference BatchNormalization nodes,
    input `images` (N, 3, 224, 224), output `features` (N, 2048), weights as initializers."""
    nodes = []

    def conv_bn(x, layer, kernel_size, stride, relu):
        conv, bn = f"{layer}_conv", f"{layer}_bn"
        nodes.append(helper.make_node("Conv", [x, f"{conv}/kernel", f"{conv}/bias"], [conv], kernel_shape=[kernel_size] * 2,
                                      strides=[stride] * 2, pads=[kernel_size // 2] * 4))
        nodes.append(helper.make_node("BatchNormalization", [conv] + [f"{bn}/{p}" for p in resnet_weights.BN_PARAMETERS],
                                      [bn], epsilon=params["bn_epsilon"]))
        if not relu:
            return bn
        nodes.append(helper.make_node("Relu", [bn], [f"{layer}_relu"]))
        return f"{layer}_relu"

    x = conv_bn("images", "conv1", 7, 2, relu=True)
    nodes.append(helper.make_node("MaxPool", [x], ["pool1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, n_in = "pool1", 64
    for stage, n_blocks, filters in resnet_weights.STAGES:
        for block in range(1, n_blocks + 1):
            prefix, stride = f"conv{stage}_block{block}", 2 if block == 1 and stage > 2 else 1
            shortcut = conv_bn(x, f"{prefix}_0", 1, stride, relu=False) if n_in != 4 * filters or stride != 1 else x
            out = conv_bn(x, f"{prefix}_1", 1, stride, relu=True)
            out = conv_bn(out, f"{prefix}_2", 3, 1, relu=True)
            out = conv_bn(out, f"{prefix}_3", 1, 1, relu=False)
            nodes.append(helper.make_node("Add", [out, shortcut], [f"{prefix}_add"]))
            nodes.append(helper.make_node("Relu", [f"{prefix}_add"], [f"{prefix}_out"]))
            x, n_in = f"{prefix}_out", 4 * filters
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["avg_pool"]))
    nodes.append(helper.make_node("Flatten", ["avg_pool"], ["features"], axis=1))
    # Conv kernels from Keras' (kh, kw, in, out) to ONNX's (out, in, kh, kw); no classifier.
    initializers = [numpy_helper.from_array(np.ascontiguousarray(a.transpose(3, 2, 0, 1) if a.ndim == 4 else a), name)
                    for name, a in arrays.items() if not name.startswith("predictions/")]
    graph = helper.make_graph(
        nodes, "resnet50_features",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["N", *params["image_shape"]])],
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", params["n_features"]])], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def inference():
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = loop.threads
    # As the notebook: the CUDA provider where this build has it (fp32, no TF32), else the CPU.
    device = "cuda" if "CUDAExecutionProvider" in ort.get_available_providers() else "cpu"
    providers = ([("CUDAExecutionProvider", {"use_tf32": 0})] if device == "cuda" else []) + ["CPUExecutionProvider"]
    session = ort.InferenceSession(resnet50(resnet_weights.random_arrays()).SerializeToString(), options,
                                   providers=providers)
    images = loop.images()
    bindings = []
    for index in range(clock.N_BATCHES):
        binding = session.io_binding()
        binding.bind_ortvalue_input("images", ort.OrtValue.ortvalue_from_numpy(loop.batch(index, images), device))
        binding.bind_output("features", device)
        bindings.append(binding)

    # No sync: a run returns once its execution providers have finished.
    return loop.measure(lambda index: session.run_with_iobinding(bindings[index % clock.N_BATCHES]))


inference()
