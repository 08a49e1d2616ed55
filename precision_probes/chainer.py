"""Chainer: `F.matmul` and `F.convolution_2d` (NCHW) on NumPy or CuPy arrays, as the run chose."""
import chainer
from chainer import functions as F

from common import precision


def measure(run):
    device = chainer.get_device("@cupy:0" if run.on_gpu else "@numpy")

    def computed(function, *arrays):
        return chainer.backend.CpuDevice().send(function(*(device.send(array) for array in arrays)).array)

    return precision.checks(run.task, matmul=lambda a, b: computed(F.matmul, a, b),
                            convolution=lambda x, w: computed(F.convolution_2d, x, w))
