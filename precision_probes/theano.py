"""Theano (Lasagne and Keras 2): `T.dot` and `T.nnet.conv2d` (NCHW, not flipped: the
cross-correlation the others compute), compiled as the notebooks' functions are."""
import theano
from theano import tensor as T

from common import precision


def product(a, b):
    left, right = T.matrix("a", dtype="float32"), T.matrix("b", dtype="float32")
    return theano.function([left, right], T.dot(left, right))(a, b)


def convolution(x, w):
    images, filters = T.tensor4("x", dtype="float32"), T.tensor4("w", dtype="float32")
    return theano.function([images, filters], T.nnet.conv2d(images, filters, filter_flip=False))(x, w)


def measure(run):
    return precision.checks(run.task, matmul=product, convolution=convolution)
