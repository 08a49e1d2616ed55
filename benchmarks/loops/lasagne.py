"""Theano + Lasagne's plain loops: one compiled `theano.function` per train step (forward,
backward and Lasagne's update rule), called on numpy batches with its input checks off
(`trust_input`, Theano's advice for small, fast functions), under the notebooks' Theano flags."""
import os
import sys
import types
import warnings

import clock

loop = clock.start(("CNN", "RNN", "FCN5"))  # pins the threads before Theano is imported

from common import paths  # noqa: E402

# The notebooks' flags: float32, OpenBLAS, compiled ops cached under the project's cache.
os.environ["THEANO_FLAGS"] = f"floatX=float32,blas.ldflags=-lopenblas,base_compiledir={paths.cache_root() / 'theano'}"
# Theano's C scan does not build on Python 3.11 (as in Lasagne_RNN): its Python scan instead.
sys.modules["theano.scan_module.scan_perform_ext"] = None

import theano  # noqa: E402
import theano.tensor as T  # noqa: E402
from theano.tensor.signal import pool  # noqa: E402

# Lasagne 0.1 imports Theano 0.x's `downsample.max_pool_2d`: mapped onto Theano 1.0's pool_2d.
downsample = types.ModuleType("theano.tensor.signal.downsample")
downsample.max_pool_2d = lambda input, ds, st=None, ignore_border=None, padding=(0, 0), mode="max": (
    pool.pool_2d(input, ws=ds, stride=st, ignore_border=ignore_border, pad=padding, mode=mode))
sys.modules[downsample.__name__] = theano.tensor.signal.downsample = downsample
with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    import lasagne  # noqa: E402
from lasagne.layers import (Conv2DLayer, DenseLayer, DropoutLayer, EmbeddingLayer, InputLayer,  # noqa: E402
                            Layer, MaxPool2DLayer)
from lasagne.nonlinearities import rectify, sigmoid  # noqa: E402

warnings.filterwarnings("ignore", message="The `image_shape` keyword argument")
# No thread API in Theano: OPENBLAS_NUM_THREADS (set by clock.start) sizes OpenBLAS; Theano's
# own OpenMP stays off, as in the notebooks.
params = loop.params


def train(model, update_rule, inputs, x, y, **hyper):
    targets = T.lvector("targets")
    loss = lasagne.objectives.categorical_crossentropy(
        T.nnet.softmax(lasagne.layers.get_output(model, inputs)), targets).mean()
    updates = update_rule(loss, lasagne.layers.get_all_params(model, trainable=True), **hyper)
    train_step = theano.function([inputs, targets], loss, updates=updates)
    train_step.trust_input = True  # the batches are exactly the inputs' types (C-contiguous views)

    def step(index):
        return train_step(*loop.batch(index, x, y))

    return loop.measure(step)


def cnn():
    network = InputLayer((None,) + tuple(params["image_shape"]))
    network = Conv2DLayer(network, 50, 3, pad="same", nonlinearity=rectify)
    # ReLU before the max-pool, as the notebook (the same as after it).
    network = Conv2DLayer(network, 50, 3, pad="same", nonlinearity=rectify)
    network = DropoutLayer(MaxPool2DLayer(network, 2), p=0.25)
    network = Conv2DLayer(network, 100, 3, pad="same", nonlinearity=rectify)
    network = Conv2DLayer(network, 100, 3, pad="same", nonlinearity=rectify)
    network = DropoutLayer(MaxPool2DLayer(network, 2), p=0.25)
    network = DropoutLayer(DenseLayer(network, 512, nonlinearity=rectify), p=0.5)
    model = DenseLayer(network, params["n_classes"], nonlinearity=None)
    return train(model, lasagne.updates.momentum, T.tensor4("inputs"), loop.images(), loop.labels(),
                 learning_rate=params["learning_rate"], momentum=params["momentum"])


class GRULayer(Layer):
    """Lasagne_RNN's GRU (cuDNN's and Keras' form, reset gate after the recurrent product) over
    `theano.scan`, returning the last state."""

    def __init__(self, incoming, num_units, **kwargs):
        super().__init__(incoming, **kwargs)
        self.num_units = num_units
        n_inputs, init = self.input_shape[-1], lasagne.init.GlorotUniform()
        self.W = self.add_param(init, (n_inputs, 3 * num_units), name="W")
        self.U = self.add_param(init, (num_units, 3 * num_units), name="U")
        self.b = self.add_param(lasagne.init.Constant(0.0), (3 * num_units,), name="b")
        self.c = self.add_param(lasagne.init.Constant(0.0), (3 * num_units,), name="c")

    def get_output_shape_for(self, input_shape):
        return input_shape[0], self.num_units

    def get_output_for(self, input, **kwargs):
        units = self.num_units
        x_all = (T.dot(input, self.W) + self.b).dimshuffle(1, 0, 2)

        def step(x, h, U, c):
            recurrent = T.dot(h, U) + c
            r = T.nnet.sigmoid(x[:, :units] + recurrent[:, :units])
            z = T.nnet.sigmoid(x[:, units:2 * units] + recurrent[:, units:2 * units])
            n = T.tanh(x[:, 2 * units:] + r * recurrent[:, 2 * units:])
            return (1 - z) * n + z * h

        h0 = T.zeros((input.shape[0], units), dtype=theano.config.floatX)
        states, _ = theano.scan(step, sequences=x_all, outputs_info=h0, non_sequences=[self.U, self.c], strict=True)
        return states[-1]


def rnn():
    network = InputLayer((None, params["sequence_length"]))
    network = EmbeddingLayer(network, params["vocabulary_size"], params["embedding_dim"])
    network = GRULayer(network, params["hidden_units"])
    model = DenseLayer(network, params["n_classes"], nonlinearity=None)
    return train(model, lasagne.updates.adam, T.imatrix("inputs"), loop.tokens(), loop.labels(),
                 learning_rate=params["learning_rate"], beta1=params["beta_1"], beta2=params["beta_2"],
                 epsilon=params["epsilon"])


def fcn5():
    sizes = params["layer_sizes"]
    network = InputLayer((None, sizes[0]))
    for units in sizes[1:-1]:
        network = DenseLayer(network, units, nonlinearity=sigmoid)
    model = DenseLayer(network, sizes[-1], nonlinearity=None)
    return train(model, lasagne.updates.sgd, T.matrix("inputs"), loop.images(), loop.labels(),
                 learning_rate=params["learning_rate"])


{"CNN": cnn, "RNN": rnn, "FCN5": fcn5}[loop.task]()
