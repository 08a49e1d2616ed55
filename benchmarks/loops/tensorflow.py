"""TensorFlow's plain loops, as its "Better performance with tf.function" guide writes them: the
notebooks' models (tf.Module, tf.nn ops, Keras' GRU layer and optimisers; GPT from Keras' own
Transformer pieces) with one `tf.function` per step, traced once over the model and optimiser it
closes over, without XLA (the default variant), batches already tensors on the device, and nothing
read back until the last step."""
import os

import clock

loop = clock.start(("CNN", "Inference", "RNN", "FCN5", "GPT"))  # pins the threads before tensorflow is imported
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

import tensorflow as tf  # noqa: E402

# Both pools are sized before the first op, as in the notebooks.
tf.config.threading.set_intra_op_parallelism_threads(loop.threads)
tf.config.threading.set_inter_op_parallelism_threads(loop.threads)
tf.config.experimental.enable_tensor_float_32_execution(False)
params = loop.params


def variable(*shape):
    return tf.Variable(tf.random.normal(shape, stddev=0.05))


def on_device(*arrays):
    """The batches as tensors on the default device: tf.identity runs there (the GPU when there is one)."""
    return [tuple(tf.identity(loop.batch(index, array)) for array in arrays) for index in range(clock.N_BATCHES)]


def train(model, variables, optimizer, *arrays, clip=None):
    optimizer.build(variables)  # slot variables made now, not inside the traced step
    batches = on_device(*arrays)

    @tf.function
    def train_step(inputs, labels):
        with tf.GradientTape() as tape:
            logits = model(inputs)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        gradients = tape.gradient(loss, variables)
        if clip:
            gradients, _ = tf.clip_by_global_norm(gradients, clip)
        optimizer.apply_gradients(zip(gradients, variables))
        return loss

    # On a GPU, steps run asynchronously: the last loss's value waits for them all.
    return loop.measure(lambda index: train_step(*batches[index % clock.N_BATCHES]), lambda loss: loss.numpy())


def cnn():
    shapes = [(3, 3, 3, 50), (3, 3, 50, 50), (3, 3, 50, 100), (3, 3, 100, 100), (6400, 512), (512, params["n_classes"])]
    kernels, biases = [variable(*shape) for shape in shapes], [variable(shape[-1]) for shape in shapes]

    def conv_block(x, index):
        x = tf.nn.relu(tf.nn.conv2d(x, kernels[index], 1, "SAME") + biases[index])
        x = tf.nn.conv2d(x, kernels[index + 1], 1, "SAME") + biases[index + 1]
        return tf.nn.dropout(tf.nn.relu(tf.nn.max_pool2d(x, 2, 2, "VALID")), 0.25)

    def model(images):
        h = tf.reshape(conv_block(conv_block(images, 0), 2), (-1, 6400))
        h = tf.nn.dropout(tf.nn.relu(tf.matmul(h, kernels[4]) + biases[4]), 0.5)
        return tf.matmul(h, kernels[5]) + biases[5]

    optimizer = tf.keras.optimizers.SGD(learning_rate=params["learning_rate"], momentum=params["momentum"])
    return train(model, kernels + biases, optimizer, loop.images(layout="NHWC"), loop.labels())


def conv_bn(n_in, n_out, size, stride, padding):
    """Convolution with bias, then inference-mode batch norm, on variables (as the notebook's ConvBN)."""
    kernel = tf.Variable(tf.random.normal((size, size, n_in, n_out), stddev=(2 / (size * size * n_in)) ** 0.5))
    bias, beta, mean = (tf.Variable(tf.zeros(n_out)) for _ in range(3))
    gamma, variance = (tf.Variable(tf.ones(n_out)) for _ in range(2))

    def apply(x, relu=True):
        x = tf.nn.bias_add(tf.nn.conv2d(x, kernel, stride, padding), bias)
        x = tf.nn.batch_normalization(x, mean, variance, beta, gamma, params["bn_epsilon"])
        return tf.nn.relu(x) if relu else x

    return apply


def bottleneck(n_in, filters, stride):
    branch = [conv_bn(n_in, filters, 1, stride, "VALID"), conv_bn(filters, filters, 3, 1, "SAME"),
              conv_bn(filters, 4 * filters, 1, 1, "VALID")]
    shortcut = conv_bn(n_in, 4 * filters, 1, stride, "VALID") if stride != 1 or n_in != 4 * filters else None

    def apply(x):
        out = branch[2](branch[1](branch[0](x)), relu=False)
        return tf.nn.relu(out + (shortcut(x, relu=False) if shortcut else x))

    return apply


def inference():
    stem = conv_bn(3, 64, 7, 2, [[0, 0], [3, 3], [3, 3], [0, 0]])  # Keras' ZeroPadding2D(3) + valid conv
    blocks, n_in = [], 64
    for stage, n_blocks, filters in ((2, 3, 64), (3, 4, 128), (4, 6, 256), (5, 3, 512)):
        for block in range(n_blocks):
            blocks.append(bottleneck(n_in, filters, 2 if block == 0 and stage > 2 else 1))
            n_in = 4 * filters

    @tf.function
    def predict(images):
        x = tf.nn.max_pool2d(tf.pad(stem(images), [[0, 0], [1, 1], [1, 1], [0, 0]]), 3, 2, "VALID")
        for block in blocks:
            x = block(x)
        return tf.reduce_mean(x, axis=[1, 2])

    batches = on_device(loop.images(layout="NHWC"))
    return loop.measure(lambda index: predict(*batches[index % clock.N_BATCHES]), lambda features: features.numpy())


def rnn():
    embeddings = variable(params["vocabulary_size"], params["embedding_dim"])
    # Keras' GRU with its defaults, as the notebook (cuDNN's fused kernel on a GPU, a tf.while_loop on a CPU).
    gru = tf.keras.layers.GRU(params["hidden_units"])
    gru.build((None, None, params["embedding_dim"]))
    dense_kernel, dense_bias = variable(params["hidden_units"], params["n_classes"]), variable(params["n_classes"])

    def model(tokens):
        return tf.matmul(gru(tf.nn.embedding_lookup(embeddings, tokens), training=True), dense_kernel) + dense_bias

    optimizer = tf.keras.optimizers.Adam(learning_rate=params["learning_rate"], beta_1=params["beta_1"],
                                         beta_2=params["beta_2"], epsilon=params["epsilon"])
    variables = [embeddings, dense_kernel, dense_bias, *gru.trainable_variables]
    return train(model, variables, optimizer, loop.tokens(), loop.labels())


def fcn5():
    sizes = params["layer_sizes"]
    kernels = [variable(n_in, n_out) for n_in, n_out in zip(sizes[:-1], sizes[1:])]
    biases = [variable(n_out) for n_out in sizes[1:]]

    def model(x):
        for kernel, bias in zip(kernels[:-1], biases[:-1]):
            x = tf.sigmoid(tf.matmul(x, kernel) + bias)
        return tf.matmul(x, kernels[-1]) + biases[-1]

    optimizer = tf.keras.optimizers.SGD(learning_rate=params["learning_rate"])
    return train(model, kernels + biases, optimizer, loop.images(), loop.labels())


def gpt():
    """nanoGPT's shape from the Transformer pieces TensorFlow ships, Keras' layers: pre-LayerNorm
    blocks of `MultiHeadAttention` under its causal mask and a 4x `Dense` MLP with exact GELU, the
    head tied to the token embedding; Keras' AdamW without decay on vectors, clipped by global norm."""
    layers, width, epsilon, rate = tf.keras.layers, params["n_embd"], params["layer_norm_epsilon"], params["dropout"]
    token_embedding = layers.Embedding(params["vocabulary_size"], width)
    position_embedding = layers.Embedding(params["block_size"], width)
    blocks = [(layers.LayerNormalization(epsilon=epsilon),
               layers.MultiHeadAttention(params["n_head"], width // params["n_head"], dropout=rate),
               layers.LayerNormalization(epsilon=epsilon),
               layers.Dense(4 * width, activation="gelu"), layers.Dense(width))  # Keras' gelu: exact by default
              for _ in range(params["n_layer"])]
    ln_f, dropout = layers.LayerNormalization(epsilon=epsilon), layers.Dropout(rate)

    def model(tokens):
        x = dropout(token_embedding(tokens) + position_embedding(tf.range(tokens.shape[1])), training=True)
        for ln_1, attention, ln_2, fc, projection in blocks:
            normed = ln_1(x)
            x = x + dropout(attention(normed, normed, use_causal_mask=True, training=True), training=True)
            x = x + dropout(projection(fc(ln_2(x))), training=True)
        return tf.matmul(ln_f(x), token_embedding.embeddings, transpose_b=True)

    inputs, targets = loop.windows(dtype="int32")
    model(inputs[:1])  # Keras layers make their variables on the first call
    pieces = [token_embedding, position_embedding, ln_f] + [layer for block in blocks for layer in block]
    variables = [variable for layer in pieces for variable in layer.trainable_variables]
    optimizer = tf.keras.optimizers.AdamW(learning_rate=params["learning_rate"], weight_decay=params["weight_decay"],
                                          beta_1=params["beta_1"], beta_2=params["beta_2"], epsilon=params["epsilon"])
    optimizer.exclude_from_weight_decay([variable for variable in variables if len(variable.shape) < 2])
    return train(model, variables, optimizer, inputs, targets, clip=params["grad_clip"])


loop.run({"CNN": cnn, "Inference": inference, "RNN": rnn, "FCN5": fcn5, "GPT": gpt})
