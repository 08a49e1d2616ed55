"""Chainer's plain loops, as its Performance Best Practices advise on the CPU: type checks off
(`chainer.config.type_check = False`), arrays on the device once, no per-step read of the loss,
and `no_backprop_mode` with `train=False` for inference. (iDeep, the guide's CPU accelerator, has
no build for this Python; the notebooks run without it too.)"""

import clock

loop = clock.start(("CNN", "Inference", "RNN", "FCN5", "GPT"))  # pins the threads before chainer is imported

import math  # noqa: E402

import chainer  # noqa: E402
import chainer.functions as F  # noqa: E402
import chainer.links as L  # noqa: E402
import numpy as np  # noqa: E402

# No thread API in Chainer: OPENBLAS_NUM_THREADS (set by clock.start) sizes numpy's BLAS.
chainer.config.type_check = False
params = loop.params


def train(model, optimizer, x, y):
    optimizer.setup(model)

    def step(index):
        inputs, labels = loop.batch(index, x, y)
        # GPT's logits are (batch·time, vocabulary): its (batch, time) targets are flattened to match.
        loss = F.softmax_cross_entropy(model(inputs), labels.reshape(-1))
        model.cleargrads()
        loss.backward()
        optimizer.update()
        return loss

    with chainer.using_config("train", True):
        return loop.measure(step)


class CNN(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.conv1 = L.Convolution2D(3, 50, ksize=3, pad=1)
            self.conv2 = L.Convolution2D(50, 50, ksize=3, pad=1)
            self.conv3 = L.Convolution2D(50, 100, ksize=3, pad=1)
            self.conv4 = L.Convolution2D(100, 100, ksize=3, pad=1)
            self.dense1 = L.Linear(6400, 512)
            self.dense2 = L.Linear(512, params["n_classes"])

    def forward(self, x):
        h = F.relu(self.conv1(x))
        h = F.dropout(F.relu(F.max_pooling_2d(self.conv2(h), 2)), 0.25)
        h = F.relu(self.conv3(h))
        h = F.dropout(F.relu(F.max_pooling_2d(self.conv4(h), 2)), 0.25)
        h = F.dropout(F.relu(self.dense1(h)), 0.5)
        return self.dense2(h)


def cnn():
    optimizer = chainer.optimizers.MomentumSGD(lr=params["learning_rate"], momentum=params["momentum"])
    return train(CNN(), optimizer, loop.images(), loop.labels(np.int32))


def inference():
    """Chainer's own ResNet-50 (L.ResNet50Layers, the ResNet v1 of its model zoo), not the notebook's
    hand-written one, so that the yardstick does not inherit the notebook's choices: random weights
    (the speed does not depend on them), its features taken at the global average pool."""
    model = L.ResNet50Layers(pretrained_model=None)
    x = loop.images()

    def step(index):
        return model.forward(loop.batch(index, x), layers=["pool5"])["pool5"]

    with chainer.using_config("train", False), chainer.no_backprop_mode():
        return loop.measure(step)


class GRUClassifier(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.embedding = L.EmbedID(params["vocabulary_size"], params["embedding_dim"])
            self.gru = L.NStepGRU(1, params["embedding_dim"], params["hidden_units"], dropout=0.0)
            self.dense = L.Linear(params["hidden_units"], params["n_classes"])

    def forward(self, tokens):
        # NStepGRU takes a list of (T, features) sequences, as in the notebook.
        last_hidden, _ = self.gru(None, list(F.separate(self.embedding(tokens), axis=0)))
        return self.dense(last_hidden[-1])


def rnn():
    optimizer = chainer.optimizers.Adam(alpha=params["learning_rate"], beta1=params["beta_1"],
                                        beta2=params["beta_2"], eps=params["epsilon"])
    return train(GRUClassifier(), optimizer, loop.tokens(), loop.labels(np.int32))


def fcn5():
    sizes = params["layer_sizes"]
    model = chainer.Sequential(L.Linear(sizes[0], sizes[1]), F.sigmoid, L.Linear(sizes[1], sizes[2]), F.sigmoid,
                               L.Linear(sizes[2], sizes[3]), F.sigmoid, L.Linear(sizes[3], sizes[4]))
    return train(model, chainer.optimizers.SGD(lr=params["learning_rate"]), loop.images(), loop.labels(np.int32))


class Block(chainer.Chain):
    """A pre-LayerNorm block (Chainer ships no attention or Transformer link): causal attention from
    F.matmul, a -inf mask and F.softmax over the (batch·time, channels) stream, then the exact-GELU
    MLP written with F.erf."""

    def __init__(self, width, epsilon):
        super().__init__()
        with self.init_scope():
            self.ln_1, self.ln_2 = L.LayerNormalization(width, eps=epsilon), L.LayerNormalization(width, eps=epsilon)
            self.qkv, self.attention_projection = L.Linear(width, 3 * width), L.Linear(width, width)
            self.fc, self.mlp_projection = L.Linear(width, 4 * width), L.Linear(4 * width, width)

    def forward(self, x, batch):
        time, width, heads, rate = x.shape[0] // batch, x.shape[1], params["n_head"], params["dropout"]
        q, k, v = (F.transpose(F.reshape(part, (batch, time, heads, width // heads)), (0, 2, 1, 3))
                   for part in F.split_axis(self.qkv(self.ln_1(x)), 3, axis=1))
        mask = np.triu(np.full((time, time), -np.inf, dtype=np.float32), k=1)
        weights = F.dropout(F.softmax(F.matmul(q, k, transb=True) / math.sqrt(width // heads) + mask, axis=3), rate)
        y = F.reshape(F.transpose(F.matmul(weights, v), (0, 2, 1, 3)), (batch * time, width))
        x = x + F.dropout(self.attention_projection(y), rate)
        h = self.fc(self.ln_2(x))
        return x + F.dropout(self.mlp_projection(0.5 * h * (1.0 + F.erf(h / math.sqrt(2.0)))), rate)


class GPT(chainer.Chain):
    def __init__(self):
        super().__init__()
        width, epsilon = params["n_embd"], params["layer_norm_epsilon"]
        with self.init_scope():
            self.token_embedding = L.EmbedID(params["vocabulary_size"], width)
            self.position_embedding = L.EmbedID(params["block_size"], width)
            self.blocks = chainer.ChainList(*(Block(width, epsilon) for _ in range(params["n_layer"])))
            self.ln_f = L.LayerNormalization(width, eps=epsilon)

    def forward(self, tokens):
        batch, time = tokens.shape
        x = self.token_embedding(tokens) + self.position_embedding(np.arange(time, dtype=np.int32))
        x = F.dropout(F.reshape(x, (batch * time, -1)), params["dropout"])
        for block in self.blocks:
            x = block(x, batch)
        return F.linear(self.ln_f(x), self.token_embedding.W)  # the head tied to the embedding


def gpt():
    model = GPT()
    # weight_decay_rate is not scaled by alpha in Chainer: lr·wd. (The notebook also rescales eps
    # each step to PyTorch's placement, a Python float per step: left out here.)
    optimizer = chainer.optimizers.AdamW(alpha=params["learning_rate"], beta1=params["beta_1"], beta2=params["beta_2"],
                                         eps=params["epsilon"], weight_decay_rate=params["learning_rate"] * params["weight_decay"])
    optimizer.setup(model)
    for parameter in model.params():
        if parameter.ndim < 2:
            parameter.update_rule.hyperparam.weight_decay_rate = 0.0
    optimizer.add_hook(chainer.optimizer_hooks.GradientClipping(params["grad_clip"]))
    return train(model, optimizer, *loop.windows(np.int32))


loop.run({"CNN": cnn, "Inference": inference, "RNN": rnn, "FCN5": fcn5, "GPT": gpt})
