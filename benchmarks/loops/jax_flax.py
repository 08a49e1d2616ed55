"""JAX + Flax NNX's plain loops, as Flax's "Performance considerations" guide writes the loop with
no Python overhead: `nnx.split` once, a regular `jax.jit` step over the pure (graphdef, state)
that merges inside and returns the new state (its buffers donated, as JAX's jit guide advises for
in-place updates), data on the device before the loop, and no loss read inside it."""
import functools

import clock

loop = clock.start(("CNN", "Inference", "RNN", "FCN5", "GPT"))  # pins the threads before JAX is imported

import jax  # noqa: E402
import optax  # noqa: E402
from flax import nnx  # noqa: E402

# XLA has no thread setting: its pool follows the cores clock.start let the process use.
# fp32 as in the notebooks: no TF32 for float32 matmuls and convolutions on a GPU.
jax.config.update("jax_default_matmul_precision", "highest")
params = loop.params


def on_device(*arrays):
    """The N_BATCHES batches, each placed on the default device once."""
    return [jax.device_put(loop.batch(index, *arrays)) for index in range(clock.N_BATCHES)]


def train(model, optimizer, x, y):
    model.train()
    graphdef, state = nnx.split((model, optimizer))
    batches = on_device(x, y)

    @functools.partial(jax.jit, donate_argnums=0)
    def train_step(state, x, y):
        model, optimizer = nnx.merge(graphdef, state)

        def batch_loss(model):
            return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()

        grads = nnx.grad(batch_loss)(model)
        optimizer.update(model, grads)
        return nnx.state((model, optimizer))

    def step(index):
        nonlocal state
        state = train_step(state, *batches[index % clock.N_BATCHES])
        return state

    return loop.measure(step, jax.block_until_ready)


class CNN(nnx.Module):
    def __init__(self, rngs):
        self.conv1 = nnx.Conv(3, 50, (3, 3), padding="SAME", rngs=rngs)
        self.conv2 = nnx.Conv(50, 50, (3, 3), padding="SAME", rngs=rngs)
        self.dropout1 = nnx.Dropout(0.25, rngs=rngs)
        self.conv3 = nnx.Conv(50, 100, (3, 3), padding="SAME", rngs=rngs)
        self.conv4 = nnx.Conv(100, 100, (3, 3), padding="SAME", rngs=rngs)
        self.dropout2 = nnx.Dropout(0.25, rngs=rngs)
        self.dense1 = nnx.Linear(6400, 512, rngs=rngs)
        self.dropout3 = nnx.Dropout(0.5, rngs=rngs)
        self.dense2 = nnx.Linear(512, params["n_classes"], rngs=rngs)

    def __call__(self, x):
        x = nnx.relu(self.conv1(x))
        x = self.dropout1(nnx.relu(nnx.max_pool(self.conv2(x), (2, 2), strides=(2, 2))))
        x = nnx.relu(self.conv3(x))
        x = self.dropout2(nnx.relu(nnx.max_pool(self.conv4(x), (2, 2), strides=(2, 2))))
        x = self.dropout3(nnx.relu(self.dense1(x.reshape(x.shape[0], -1))))
        return self.dense2(x)


def cnn():
    model = CNN(nnx.Rngs(params=0, dropout=1))
    optimizer = nnx.Optimizer(model, optax.sgd(params["learning_rate"], momentum=params["momentum"]), wrt=nnx.Param)
    return train(model, optimizer, loop.images(layout="NHWC"), loop.labels(dtype="int32"))


class ConvBN(nnx.Module):
    def __init__(self, n_in, n_out, kernel_size, stride, rngs):
        # Explicit symmetric padding, as the notebook's (Keras'): XLA's "SAME" pads the strided 7×7 unevenly.
        self.conv = nnx.Conv(n_in, n_out, (kernel_size, kernel_size), strides=stride, padding=kernel_size // 2, rngs=rngs)
        self.bn = nnx.BatchNorm(n_out, use_running_average=True, epsilon=params["bn_epsilon"], rngs=rngs)

    def __call__(self, x):
        return self.bn(self.conv(x))


class Bottleneck(nnx.Module):
    def __init__(self, n_in, filters, stride, rngs):
        self.layers = nnx.List([ConvBN(n_in, filters, 1, stride, rngs), ConvBN(filters, filters, 3, 1, rngs),
                                ConvBN(filters, 4 * filters, 1, 1, rngs)])
        self.shortcut = (ConvBN(n_in, 4 * filters, 1, stride, rngs)
                         if stride != 1 or n_in != 4 * filters else None)

    def __call__(self, x):
        shortcut = self.shortcut(x) if self.shortcut is not None else x
        out = nnx.relu(self.layers[0](x))
        out = nnx.relu(self.layers[1](out))
        return nnx.relu(self.layers[2](out) + shortcut)


class ResNet50(nnx.Module):
    def __init__(self, rngs):
        self.conv1 = ConvBN(3, 64, 7, 2, rngs)
        blocks, n_in = [], 64
        for stage, n_blocks, filters in ((2, 3, 64), (3, 4, 128), (4, 6, 256), (5, 3, 512)):
            for block in range(n_blocks):
                blocks.append(Bottleneck(n_in, filters, 2 if block == 0 and stage > 2 else 1, rngs))
                n_in = 4 * filters
        self.blocks = nnx.List(blocks)

    def __call__(self, x):
        x = nnx.max_pool(nnx.relu(self.conv1(x)), (3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))
        for block in self.blocks:
            x = block(x)
        return x.mean(axis=(1, 2))


def inference():
    graphdef, state = nnx.split(ResNet50(nnx.Rngs(0)))
    batches = on_device(loop.images(layout="NHWC"))

    @jax.jit
    def predict(state, x):
        return nnx.merge(graphdef, state)(x)

    return loop.measure(lambda index: predict(state, batches[index % clock.N_BATCHES]), jax.block_until_ready)


class GRUCell(nnx.GRUCell):
    """nnx.GRUCell with a biased recurrent projection, as the notebook's (the reference GRU's c)."""

    def __init__(self, in_features, hidden_features, *, rngs):
        super().__init__(in_features, hidden_features, rngs=rngs)
        self.dense_h = nnx.Linear(hidden_features, 3 * hidden_features, rngs=rngs)


class GRUClassifier(nnx.Module):
    def __init__(self, rngs):
        self.embedding = nnx.Embed(params["vocabulary_size"], params["embedding_dim"], rngs=rngs)
        self.gru = nnx.RNN(GRUCell(params["embedding_dim"], params["hidden_units"], rngs=rngs), return_carry=True)
        self.dense = nnx.Linear(params["hidden_units"], params["n_classes"], rngs=rngs)

    def __call__(self, tokens):
        last_hidden, _ = self.gru(self.embedding(tokens))
        return self.dense(last_hidden)


def rnn():
    model = GRUClassifier(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(params["learning_rate"], b1=params["beta_1"], b2=params["beta_2"],
                                                eps=params["epsilon"]), wrt=nnx.Param)
    return train(model, optimizer, loop.tokens(), loop.labels(dtype="int32"))


class FCN5(nnx.Module):
    def __init__(self, sizes, rngs):
        self.layers = nnx.List([nnx.Linear(n_in, n_out, rngs=rngs) for n_in, n_out in zip(sizes, sizes[1:])])

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = nnx.sigmoid(layer(x))
        return self.layers[-1](x)


def fcn5():
    model = FCN5(params["layer_sizes"], nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(params["learning_rate"]), wrt=nnx.Param)
    return train(model, optimizer, loop.images(), loop.labels(dtype="int32"))


class Block(nnx.Module):
    """A pre-LayerNorm block from Flax's pieces (Flax ships no Transformer layer): nnx.MultiHeadAttention
    under a causal mask, and an nnx.Sequential MLP with the exact GELU."""

    def __init__(self, rngs):
        width, rate, epsilon = params["n_embd"], params["dropout"], params["layer_norm_epsilon"]
        self.ln_1 = nnx.LayerNorm(width, epsilon=epsilon, rngs=rngs)
        self.attention = nnx.MultiHeadAttention(params["n_head"], width, dropout_rate=rate, broadcast_dropout=False,
                                                decode=False, rngs=rngs)
        self.dropout = nnx.Dropout(rate, rngs=rngs)
        self.ln_2 = nnx.LayerNorm(width, epsilon=epsilon, rngs=rngs)
        self.mlp = nnx.Sequential(nnx.Linear(width, 4 * width, rngs=rngs), functools.partial(jax.nn.gelu, approximate=False),
                                  nnx.Linear(4 * width, width, rngs=rngs), nnx.Dropout(rate, rngs=rngs))

    def __call__(self, x):
        x = x + self.dropout(self.attention(self.ln_1(x), is_causal=True))
        return x + self.mlp(self.ln_2(x))


class GPT(nnx.Module):
    def __init__(self, rngs):
        self.token_embedding = nnx.Embed(params["vocabulary_size"], params["n_embd"], rngs=rngs)
        self.position_embedding = nnx.Embed(params["block_size"], params["n_embd"], rngs=rngs)
        self.dropout = nnx.Dropout(params["dropout"], rngs=rngs)
        self.blocks = nnx.List([Block(rngs) for _ in range(params["n_layer"])])
        self.ln_f = nnx.LayerNorm(params["n_embd"], epsilon=params["layer_norm_epsilon"], rngs=rngs)

    def __call__(self, tokens):
        x = self.dropout(self.token_embedding(tokens) + self.position_embedding(jax.numpy.arange(tokens.shape[-1])))
        for block in self.blocks:
            x = block(x)
        return self.token_embedding.attend(self.ln_f(x))  # the head tied to the embedding


def gpt():
    model = GPT(nnx.Rngs(params=0, dropout=1))
    # nanoGPT's decay group: tensors of 2+ dimensions, but not the attention's (heads, head_dim) biases.
    decayed = functools.partial(jax.tree_util.tree_map_with_path,
                                lambda path, p: p.ndim >= 2 and "bias" not in jax.tree_util.keystr(path))
    optimizer = nnx.Optimizer(model, optax.chain(
        optax.clip_by_global_norm(params["grad_clip"]),
        optax.adamw(params["learning_rate"], b1=params["beta_1"], b2=params["beta_2"], eps=params["epsilon"],
                    weight_decay=params["weight_decay"], mask=decayed)), wrt=nnx.Param)
    return train(model, optimizer, *loop.windows(dtype="int32"))


loop.run({"CNN": cnn, "Inference": inference, "RNN": rnn, "FCN5": fcn5, "GPT": gpt})
