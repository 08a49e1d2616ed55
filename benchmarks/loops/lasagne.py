"""Theano + Lasagne's plain loops: one compiled `theano.function` per train step (forward,
backward and Lasagne's update rule), called on numpy batches with its input checks off
(`trust_input`, Theano's advice for small, fast functions), under the notebooks' Theano flags."""
import math
import os
import sys
import types
import warnings

import clock

loop = clock.start(("CNN", "RNN", "FCN5", "GPT"))  # pins the threads before Theano is imported

from common import paths  # noqa: E402

# The notebooks' flags: float32, OpenBLAS, compiled ops cached under the project's cache.
os.environ["THEANO_FLAGS"] = f"floatX=float32,blas.ldflags=-lopenblas,base_compiledir={paths.cache_root() / 'theano'}"
# Theano's C scan does not build on Python 3.11 (as in Lasagne_RNN): its Python scan instead.
sys.modules["theano.scan_module.scan_perform_ext"] = None

import numpy as np  # noqa: E402
import theano  # noqa: E402
import theano.tensor as T  # noqa: E402
from theano.sandbox.rng_mrg import MRG_RandomStreams  # noqa: E402
from theano.tensor.signal import pool  # noqa: E402

# Lasagne 0.1 imports Theano 0.x's `downsample.max_pool_2d`: mapped onto Theano 1.0's pool_2d.
downsample = types.ModuleType("theano.tensor.signal.downsample")
downsample.max_pool_2d = lambda input, ds, st=None, ignore_border=None, padding=(0, 0), mode="max": (
    pool.pool_2d(input, ws=ds, stride=st, ignore_border=ignore_border, pad=padding, mode=mode))
sys.modules[downsample.__name__] = theano.tensor.signal.downsample = downsample
with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    import lasagne  # noqa: E402
from lasagne.layers import (Conv2DLayer, DenseLayer, DropoutLayer, ElemwiseSumLayer, EmbeddingLayer,  # noqa: E402
                            InputLayer, Layer, MaxPool2DLayer, MergeLayer, ReshapeLayer)
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


class LayerNorm(Layer):
    """Lasagne ships no LayerNorm (nor attention, nor a Transformer): the model's pieces are its
    own Layers, DenseLayers on (batch·time, width) rows between them."""

    def __init__(self, incoming, **kwargs):
        super().__init__(incoming, **kwargs)
        self.scale = self.add_param(lasagne.init.Constant(1.0), self.input_shape[-1:], name="scale")
        self.offset = self.add_param(lasagne.init.Constant(0.0), self.input_shape[-1:], name="offset")

    def get_output_for(self, input, **kwargs):
        centred = input - input.mean(axis=-1, keepdims=True)
        return centred / T.sqrt(T.sqr(centred).mean(axis=-1, keepdims=True) + params["layer_norm_epsilon"]) * \
            self.scale + self.offset


class CausalAttention(MergeLayer):
    """softmax(q kᵀ / √d) v over the future-masked scores of the fused qkv rows; input 2, the
    tokens, gives (batch, time). Dropout on the weights, as Lasagne's DropoutLayer draws it."""

    def __init__(self, incomings, **kwargs):
        super().__init__(incomings, **kwargs)
        self.srng = MRG_RandomStreams(lasagne.random.get_rng().randint(1, 2147462579))

    def get_output_shape_for(self, input_shapes):
        return input_shapes[0][0], input_shapes[0][1] // 3

    def get_output_for(self, inputs, deterministic=False, **kwargs):
        qkv, (batch, time) = inputs[0], inputs[1].shape
        heads = params["n_head"]
        size = params["n_embd"] // heads
        qkv = qkv.reshape((batch, time, 3, heads, size)).dimshuffle(2, 0, 3, 1, 4)
        q, k, v = (qkv[part].reshape((batch * heads, time, size)) for part in range(3))
        scores = T.switch(T.tri(time, time, dtype="int8"), T.batched_dot(q, k.dimshuffle(0, 2, 1)) * (1.0 / math.sqrt(size)),
                          np.float32(-np.inf))
        weights = T.nnet.softmax(scores.reshape((-1, time))).reshape(scores.shape)
        if not deterministic:
            keep = 1.0 - params["dropout"]
            weights = weights / keep * self.srng.binomial(weights.shape, p=keep, dtype=theano.config.floatX)
        out = T.batched_dot(weights, v).reshape((batch, heads, time, size)).dimshuffle(0, 2, 1, 3)
        return out.reshape((batch * time, params["n_embd"]))


class AddPositions(Layer):
    def __init__(self, incoming, **kwargs):
        super().__init__(incoming, **kwargs)
        self.W = self.add_param(lasagne.init.Normal(0.02), (params["block_size"], params["n_embd"]), name="W")

    def get_output_for(self, input, **kwargs):
        return input + self.W[:input.shape[1]]


class TiedHead(Layer):
    def __init__(self, incoming, W, **kwargs):
        super().__init__(incoming, **kwargs)
        self.W = self.add_param(W, W.get_value().shape, name="W")

    def get_output_shape_for(self, input_shape):
        return input_shape[0], params["vocabulary_size"]

    def get_output_for(self, input, **kwargs):
        return T.dot(input, self.W.T)


def gpt():
    width, dropout, init = params["n_embd"], params["dropout"], lasagne.init.Normal(0.02)
    tokens = InputLayer((None, None))
    embedding = EmbeddingLayer(tokens, params["vocabulary_size"], width, W=init)
    network = DropoutLayer(ReshapeLayer(AddPositions(embedding), (-1, width)), p=dropout)
    for _ in range(params["n_layer"]):
        attended = CausalAttention([DenseLayer(LayerNorm(network), 3 * width, W=init, nonlinearity=None), tokens])
        attended = DenseLayer(attended, width, W=init, nonlinearity=None)
        network = ElemwiseSumLayer([network, DropoutLayer(attended, p=dropout)])
        hidden = DenseLayer(LayerNorm(network), 4 * width, W=init,
                            nonlinearity=lambda x: 0.5 * x * (1.0 + T.erf(x * math.sqrt(0.5))))
        network = ElemwiseSumLayer([network, DropoutLayer(DenseLayer(hidden, width, W=init, nonlinearity=None), p=dropout)])
    model = TiedHead(LayerNorm(network), embedding.W)
    inputs, targets = T.imatrix("inputs"), T.imatrix("targets")
    loss = lasagne.objectives.categorical_crossentropy(
        T.nnet.softmax(lasagne.layers.get_output(model, inputs)), targets.flatten()).mean()
    parameters = lasagne.layers.get_all_params(model, trainable=True)
    gradients = lasagne.updates.total_norm_constraint(theano.grad(loss, parameters), params["grad_clip"], epsilon=1e-6)
    # Lasagne's own Adam (epsilon on the uncorrected sqrt(v): the same work) with AdamW's
    # decoupled decay added on the matrices and embeddings.
    updates = lasagne.updates.adam(gradients, parameters, learning_rate=params["learning_rate"],
                                   beta1=params["beta_1"], beta2=params["beta_2"], epsilon=params["epsilon"])
    for parameter in parameters:
        if parameter.ndim >= 2:
            updates[parameter] -= params["learning_rate"] * params["weight_decay"] * parameter
    train_step = theano.function([inputs, targets], loss, updates=updates)
    train_step.trust_input = True  # the windows are exactly the inputs' types (int32, C-contiguous)
    x, y = loop.windows(dtype=np.int32)
    return loop.measure(lambda index: train_step(*loop.batch(index, x, y)))


loop.run({"CNN": cnn, "RNN": rnn, "FCN5": fcn5, "GPT": gpt})
