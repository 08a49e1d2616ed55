"""MXNet Gluon's plain loops, as its guide advises: the network hybridized into one cached graph
(static_alloc / static_shape, as the notebooks do), `autograd.record` + `backward` + `Trainer.step`,
the data already on the device and sliced without a copy, and no read of the loss per step: the
engine runs asynchronously and `mx.nd.waitall` waits for the last step."""
import clock

loop = clock.start(("CNN", "Inference", "RNN", "FCN5"))  # pins OMP_NUM_THREADS before mxnet is imported

import mxnet as mx  # noqa: E402
from mxnet import autograd, gluon  # noqa: E402
from mxnet.gluon import nn, rnn  # noqa: E402
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


def conv_bn(n_in, n_out, kernel, stride, epsilon):
    block = nn.HybridSequential()
    block.add(nn.Conv2D(n_out, kernel, stride, kernel // 2, in_channels=n_in),
              nn.BatchNorm(epsilon=epsilon, in_channels=n_out))
    return block


class Bottleneck(nn.HybridBlock):
    def __init__(self, n_in, filters, stride, epsilon):
        super().__init__()
        with self.name_scope():
            self.conv1 = conv_bn(n_in, filters, 1, stride, epsilon)
            self.conv2 = conv_bn(filters, filters, 3, 1, epsilon)
            self.conv3 = conv_bn(filters, 4 * filters, 1, 1, epsilon)
            self.shortcut = (conv_bn(n_in, 4 * filters, 1, stride, epsilon)
                             if stride != 1 or n_in != 4 * filters else None)

    def hybrid_forward(self, F, x):
        shortcut = self.shortcut(x) if self.shortcut is not None else x
        out = F.relu(self.conv2(F.relu(self.conv1(x))))
        return F.relu(self.conv3(out) + shortcut)


def inference():
    epsilon = params["bn_epsilon"]
    model = nn.HybridSequential()
    model.add(conv_bn(3, 64, 7, 2, epsilon), nn.Activation("relu"), nn.MaxPool2D(3, 2, 1))
    n_in = 64
    for stage, n_blocks, filters in ((2, 3, 64), (3, 4, 128), (4, 6, 256), (5, 3, 512)):
        for block in range(n_blocks):
            model.add(Bottleneck(n_in, filters, 2 if block == 0 and stage > 2 else 1, epsilon))
            n_in = 4 * filters
    model.add(nn.GlobalAvgPool2D(), nn.Flatten())
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


{"CNN": cnn, "Inference": inference, "RNN": rnn_task, "FCN5": fcn5}[loop.task]()
