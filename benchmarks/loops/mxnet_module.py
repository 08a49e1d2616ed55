"""MXNet Module API's plain loops: the symbolic graph bound once at the batch shape, then
`forward_backward` + `update` per batch, as the notebooks drive it (rather than `Module.fit`, whose
per-batch metric reads every output back to the host), with the batches already on the device and
no read of the loss per step: the engine runs asynchronously and `mx.nd.waitall` waits for the
last step. Inference is `forward(is_train=False)` on a module bound for inference only, of the
Gluon model zoo's ResNet-50 exported to a symbol."""
import clock

loop = clock.start(("CNN", "Inference", "RNN"))  # pins OMP_NUM_THREADS before mxnet is imported

import tempfile  # noqa: E402

import mxnet as mx  # noqa: E402
from mxnet import gluon  # noqa: E402
from mxnet.gluon.model_zoo import vision  # noqa: E402
from benchmarks.loops.mxnet_engine import ctx, on_device, sync  # noqa: E402

params = loop.params


def bind(symbol, data_shape, for_training=True):
    labels = ["softmax_label"] if for_training else None
    module = mx.mod.Module(symbol, context=ctx, data_names=["data"], label_names=labels)
    module.bind(data_shapes=[("data", data_shape)],
                label_shapes=[("softmax_label", (loop.batch_size,))] if for_training else None,
                for_training=for_training)
    module.init_params(mx.init.Xavier())
    return module


def train(symbol, optimizer, settings, x, y):
    module = bind(symbol, (loop.batch_size,) + x.shape[1:])
    # Given by name, the optimizer gets rescale_grad = 1 / batch size from the module (no kvstore
    # on one device).
    module.init_optimizer(optimizer=optimizer, optimizer_params=settings)
    # `y`: float32, the dtype SoftmaxOutput's label takes; one DataBatch per distinct batch.
    x, y = on_device(x), on_device(y)
    data = [mx.io.DataBatch(data=[inputs], label=[labels])
            for inputs, labels in (loop.batch(index, x, y) for index in range(clock.N_BATCHES))]

    def step(index):
        module.forward_backward(data[index % clock.N_BATCHES])
        module.update()

    return loop.measure(step, sync)


def cnn():
    net = mx.sym.Variable("data")
    for name, filters in (("conv1", 50), ("conv2", 50), ("conv3", 100), ("conv4", 100)):
        net = mx.sym.Convolution(net, kernel=(3, 3), pad=(1, 1), num_filter=filters, name=name)
        if name in ("conv2", "conv4"):
            net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max")
        net = mx.sym.Activation(net, act_type="relu")
        if name in ("conv2", "conv4"):
            net = mx.sym.Dropout(net, p=0.25)
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=512, name="dense1")
    net = mx.sym.Dropout(mx.sym.Activation(net, act_type="relu"), p=0.5)
    net = mx.sym.FullyConnected(net, num_hidden=params["n_classes"], name="dense2")
    return train(mx.sym.SoftmaxOutput(net, name="softmax"), "sgd",
                 {"learning_rate": params["learning_rate"], "momentum": params["momentum"]},
                 loop.images(), loop.labels(dtype="float32"))


def inference():
    """MXNet's own ResNet-50 v1, not the notebook's hand-written graph, so that the yardstick does
    not inherit the notebook's choices: the Gluon model zoo's, exported to a symbol and parameters
    and loaded back as MXNet's guide moves a Gluon model to the Module API; random weights (the
    speed does not depend on them)."""
    network = gluon.nn.HybridSequential()
    network.add(vision.resnet50_v1().features, gluon.nn.Flatten())
    network.initialize(mx.init.Xavier(), ctx=ctx)
    network.hybridize()
    images = on_device(loop.images())
    network(loop.batch(0, images))  # export needs the graph, which the first call traces
    with tempfile.TemporaryDirectory() as folder:
        network.export(f"{folder}/resnet50_v1")
        symbol, arg_params, aux_params = mx.model.load_checkpoint(f"{folder}/resnet50_v1", 0)
    module = mx.mod.Module(symbol, context=ctx, data_names=["data"], label_names=None)
    module.bind(data_shapes=[("data", (loop.batch_size,) + images.shape[1:])], for_training=False)
    module.set_params(arg_params, aux_params, allow_missing=False)
    data = [mx.io.DataBatch(data=[loop.batch(index, images)]) for index in range(clock.N_BATCHES)]

    def step(index):
        module.forward(data[index % clock.N_BATCHES], is_train=False)

    return loop.measure(step, sync)


def rnn():
    units = params["hidden_units"]
    embedded = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=params["vocabulary_size"],
                                output_dim=params["embedding_dim"], name="embedding")
    # The fused RNN operator (oneDNN's GRU on this build), time-major, on one packed parameter
    # vector, from a zero state whose batch size (0) is inferred at bind.
    packed = mx.sym.Variable("gru_parameters", init=mx.init.Uniform(0.1))
    gru = mx.sym.RNN(mx.sym.swapaxes(embedded, 0, 1), packed, mx.sym.zeros(shape=(1, 0, units)), state_size=units,
                     num_layers=1, mode="gru", state_outputs=True, name="gru")
    logits = mx.sym.FullyConnected(mx.sym.reshape(gru[1], shape=(-1, units)), num_hidden=params["n_classes"],
                                   name="dense")
    # Token ids as float32, the embedding weight's dtype, as the notebook gives them.
    return train(mx.sym.SoftmaxOutput(logits, name="softmax"), "adam",
                 {"learning_rate": params["learning_rate"], "beta1": params["beta_1"], "beta2": params["beta_2"],
                  "epsilon": params["epsilon"]},
                 loop.tokens(dtype="float32"), loop.labels(dtype="float32"))


loop.run({"CNN": cnn, "Inference": inference, "RNN": rnn})
