"""MXNet Gluon's plain loops, as its guide advises: the network hybridized into one cached graph
(static_alloc / static_shape, as the notebooks do), `autograd.record` + `backward` + `Trainer.step`
(GPT: `allreduce_grads`, `clip_global_norm`, `update`, with a fused multi-tensor AdamW update),
the data already on the device and sliced without a copy, and no read of the loss per step: the
engine runs asynchronously and `mx.nd.waitall` waits for the last step."""
import clock

loop = clock.start(("CNN", "Inference", "RNN", "FCN5", "GPT"))  # pins OMP_NUM_THREADS before mxnet is imported

import math  # noqa: E402

import mxnet as mx  # noqa: E402
from mxnet import autograd, gluon  # noqa: E402
from mxnet.gluon import nn, rnn  # noqa: E402
from mxnet.gluon.model_zoo import vision  # noqa: E402
from benchmarks.loops.mxnet_engine import ctx, on_device, sync  # noqa: E402

params = loop.params


def hybridized(model):
    model.initialize(mx.init.Xavier(), ctx=ctx)
    model.hybridize(static_alloc=True, static_shape=True)
    return model


def train(model, optimizer, settings, x, y):
    """`y`: float32 class ids, as the notebooks give them to the softmax cross-entropy."""
    trainer = gluon.Trainer(model.collect_params(), optimizer, settings)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    # Basic slices of an NDArray are views, no copy.
    x, y = on_device(x), on_device(y)

    def step(index):
        inputs, labels = loop.batch(index, x, y)
        with autograd.record():
            loss = loss_fn(model(inputs), labels)
        loss.backward()
        trainer.step(loop.batch_size)
        return loss

    return loop.measure(step, sync)


def cnn():
    model = nn.HybridSequential()
    model.add(
        nn.Conv2D(50, 3, padding=1, in_channels=3), nn.Activation("relu"),
        nn.Conv2D(50, 3, padding=1, in_channels=50), nn.MaxPool2D(2), nn.Activation("relu"), nn.Dropout(0.25),
        nn.Conv2D(100, 3, padding=1, in_channels=50), nn.Activation("relu"),
        nn.Conv2D(100, 3, padding=1, in_channels=100), nn.MaxPool2D(2), nn.Activation("relu"), nn.Dropout(0.25),
        nn.Dense(512, in_units=6400), nn.Activation("relu"), nn.Dropout(0.5),
        nn.Dense(params["n_classes"], in_units=512))
    return train(hybridized(model), "sgd", {"learning_rate": params["learning_rate"], "momentum": params["momentum"]},
                 loop.images(), loop.labels(dtype="float32"))


def inference():
    """MXNet's own ResNet-50 v1 from the Gluon model zoo, not the notebook's hand-written one, so
    that the yardstick does not inherit the notebook's choices: random weights (the speed does not
    depend on them); the zoo's convolutions before a batch norm carry no bias, the notebook's
    (Keras') do."""
    model = nn.HybridSequential()
    model.add(vision.resnet50_v1().features, nn.Flatten())
    model = hybridized(model)
    x = on_device(loop.images())

    def step(index):
        return model(loop.batch(index, x))  # outside autograd.record(): batch norm in inference mode

    return loop.measure(step, sync)


class GRUClassifier(nn.HybridBlock):
    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.embedding = nn.Embedding(params["vocabulary_size"], params["embedding_dim"])
            # The fused RNN operator (oneDNN's GRU on this build), batch-major as in the notebook.
            self.gru = rnn.GRU(params["hidden_units"], layout="NTC", input_size=params["embedding_dim"])
            self.dense = nn.Dense(params["n_classes"], in_units=params["hidden_units"])

    def hybrid_forward(self, F, tokens):
        return self.dense(F.slice_axis(self.gru(self.embedding(tokens)), axis=1, begin=-1, end=None))


def rnn_task():
    # Token ids as float32, the embedding weight's dtype, as the notebook gives them.
    return train(hybridized(GRUClassifier()), "adam",
                 {"learning_rate": params["learning_rate"], "beta1": params["beta_1"], "beta2": params["beta_2"],
                  "epsilon": params["epsilon"]},
                 loop.tokens(dtype="float32"), loop.labels(dtype="float32"))


def fcn5():
    sizes = params["layer_sizes"]
    model = nn.HybridSequential()
    model.add(nn.Dense(sizes[1], activation="sigmoid", in_units=sizes[0]),
              nn.Dense(sizes[2], activation="sigmoid", in_units=sizes[1]),
              nn.Dense(sizes[3], activation="sigmoid", in_units=sizes[2]),
              nn.Dense(sizes[4], in_units=sizes[3]))
    return train(hybridized(model), "sgd", {"learning_rate": params["learning_rate"]},
                 loop.images(), loop.labels(dtype="float32"))


class TransformerBlock(nn.HybridBlock):
    """A pre-LayerNorm block on MXNet's own fused self-attention operators (GluonNLP BERT's
    `interleaved_matmul_selfatt_*`), time-major: Gluon 1.x ships no attention layer."""

    def __init__(self, width, heads, dropout, epsilon):
        super().__init__()
        self.heads = heads
        with self.name_scope():
            self.ln_1 = nn.LayerNorm(epsilon=epsilon, in_channels=width)
            self.ln_2 = nn.LayerNorm(epsilon=epsilon, in_channels=width)
            self.qkv = nn.Dense(3 * width, in_units=width, flatten=False)  # (q, k, v) interleaved per head
            self.projection = nn.Dense(width, in_units=width, flatten=False)
            self.attention_dropout, self.residual_dropout = nn.Dropout(dropout), nn.Dropout(dropout)
            self.mlp = nn.HybridSequential()
            self.mlp.add(nn.Dense(4 * width, in_units=width, flatten=False), nn.GELU(),
                         nn.Dense(width, in_units=4 * width, flatten=False), nn.Dropout(dropout))

    def hybrid_forward(self, F, x):
        qkv = self.qkv(self.ln_1(x))
        scores = F.contrib.interleaved_matmul_selfatt_qk(qkv, heads=self.heads)  # scaled by 1/sqrt(head size)
        # Causal: row i normalised over its first i + 1 keys.
        lengths = F.broadcast_like(F.contrib.arange_like(scores, axis=1, start=1).expand_dims(0), scores,
                                   lhs_axes=(0,), rhs_axes=(0,)).astype("int32")
        probabilities = self.attention_dropout(F.softmax(scores, length=lengths, use_length=True))
        x = x + self.residual_dropout(self.projection(
            F.contrib.interleaved_matmul_selfatt_valatt(qkv, probabilities, heads=self.heads)))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.HybridBlock):
    def __init__(self):
        super().__init__()
        width, epsilon = params["n_embd"], params["layer_norm_epsilon"]
        with self.name_scope():
            self.token_embedding = nn.Embedding(params["vocabulary_size"], width)
            self.position_embedding = nn.Embedding(params["block_size"], width)
            self.dropout = nn.Dropout(params["dropout"])
            self.blocks = nn.HybridSequential()
            self.blocks.add(*(TransformerBlock(width, params["n_head"], params["dropout"], epsilon)
                              for _ in range(params["n_layer"])))
            self.ln_f = nn.LayerNorm(epsilon=epsilon, in_channels=width)
            self.head = nn.Dense(params["vocabulary_size"], in_units=width, use_bias=False, flatten=False,
                                 params=self.token_embedding.params)  # tied

    def hybrid_forward(self, F, tokens):  # (batch, time) in, (time, batch, vocabulary) out
        tokens = tokens.transpose()
        x = F.broadcast_add(self.token_embedding(tokens),
                            self.position_embedding(F.contrib.arange_like(tokens, axis=0)).expand_dims(1))
        return self.head(self.ln_f(self.blocks(self.dropout(x))))


@mx.optimizer.register
class AdamW(mx.optimizer.Optimizer):
    """torch.optim.AdamW (MXNet has none) on the fused multi-tensor `contrib.multi_adamw_update`,
    which has no bias correction: it goes into its per-tensor rate and epsilon."""

    def __init__(self, learning_rate, beta1, beta2, epsilon, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.aggregate_num = 50  # the Updater hands the parameters over 50 at a time (the operator's limit)

    def create_state(self, index, weight):
        return mx.nd.zeros_like(weight), mx.nd.zeros_like(weight)

    def update(self, indices, weights, grads, states):
        self._update_count(indices)
        step = self._index_update_count[indices[0]]
        root_correction_2 = math.sqrt(1.0 - self.beta2 ** step)
        means, variances = zip(*states)
        mx.nd.contrib.multi_adamw_update(
            weights, grads, means, variances, rescale_grad=self.rescale_grad,
            lrs=[root_correction_2 / (1.0 - self.beta1 ** step)] * len(weights), etas=self._get_lrs(indices),
            wds=self._get_wds(indices), beta1=self.beta1, beta2=self.beta2,
            epsilon=self.epsilon * root_correction_2, out=weights)


def gpt():
    model = hybridized(GPT())
    for parameter in model.collect_params().values():  # nanoGPT: no decay on biases and LayerNorm
        parameter.wd_mult = 1.0 if len(parameter.shape) >= 2 else 0.0
    trainer = gluon.Trainer(model.collect_params(), "adamw",
                            {"learning_rate": params["learning_rate"], "beta1": params["beta_1"],
                             "beta2": params["beta_2"], "epsilon": params["epsilon"], "wd": params["weight_decay"]})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    gradients = [parameter.grad(ctx) for parameter in model.collect_params().values()]
    x, y = (on_device(array) for array in loop.windows(dtype="int32"))

    def step(index):
        inputs, targets = loop.batch(index, x, y)
        with autograd.record():
            loss = loss_fn(model(inputs), targets.transpose()).mean()
        loss.backward()
        trainer.allreduce_grads()
        gluon.utils.clip_global_norm(gradients, params["grad_clip"], check_isfinite=False)
        trainer.update(1)
        return loss

    return loop.measure(step, sync)


loop.run({"CNN": cnn, "Inference": inference, "RNN": rnn_task, "FCN5": fcn5, "GPT": gpt})
