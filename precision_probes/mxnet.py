"""MXNet (Gluon and the Module API): `nd.dot` and `nd.Convolution` (NCHW) in the run's context."""
import mxnet as mx

from common import precision


def measure(run):
    context = mx.gpu(0) if run.on_gpu else mx.cpu()

    def on_device(array):
        return mx.nd.array(array, ctx=context, dtype="float32")

    return precision.checks(
        run.task, matmul=lambda a, b: mx.nd.dot(on_device(a), on_device(b)).asnumpy(),
        convolution=lambda x, w: mx.nd.Convolution(on_device(x), on_device(w), kernel=w.shape[2:],
                                                   num_filter=w.shape[0], no_bias=True).asnumpy())
