"""Keras 3's plain loops on the backend KERAS_BACKEND names (tensorflow, jax or torch), as its
guides write them: `model.fit` on in-memory arrays, with no callback or compiled metric, compiled
as the notebooks compile (TensorFlow graphs without XLA, jax.jit, torch eager; the same
`steps_per_execution`), and `predict_on_batch` on a backend tensor for inference (on Keras' own
ResNet-50 from keras.applications)."""
import os

import clock

loop = clock.start(("CNN", "Inference", "RNN", "FCN5", "GPT"))  # pins the threads before the backend is imported
BACKEND = os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402

# The backend's thread and fp32 settings, as the notebooks' imports cell sets them.
if BACKEND == "tensorflow":
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(loop.threads)
    tf.config.threading.set_inter_op_parallelism_threads(loop.threads)
    tf.config.experimental.enable_tensor_float_32_execution(False)
elif BACKEND == "torch":
    import torch

    torch.set_num_threads(loop.threads)
    torch.backends.cuda.matmul.fp32_precision = "ieee"
    torch.backends.cudnn.fp32_precision = "ieee"
elif BACKEND == "jax":
    import jax

    # No thread setting in JAX: XLA's pool follows the cores clock.start let the process use.
    jax.config.update("jax_default_matmul_precision", "highest")

import keras  # noqa: E402
from keras import layers  # noqa: E402

# TensorFlow: graphs without XLA (the default variant); JAX: "auto" is jax.jit; torch: "auto" is eager.
JIT_COMPILE = False if BACKEND == "tensorflow" else "auto"
params = loop.params


def train(model, optimizer, x, y):
    # The notebooks' CNN, RNN and GPT run a sixth of the steady steps per execution (their timer
    # window); torch's trainer allows only 1, and FCN5 keeps the default 1.
    multi_step = BACKEND != "torch" and loop.task != "FCN5"
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=JIT_COMPILE, steps_per_execution=max(1, loop.timed_steps // 6) if multi_step else 1)

    def data(steps):
        """fit's input: `steps` batches, cycling through the synthetic ones."""
        if BACKEND == "tensorflow":
            # Not numpy arrays: fit wraps them in an autotuned tf.data pipeline, and the autotuner's
            # thread makes fit's return wait for it (seconds). The same batches, autotuning off:
            options = tf.data.Options()
            options.autotune.enabled = False
            dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(loop.batch_size).repeat().take(steps)
            return {"x": dataset.with_options(options)}
        x_steps, y_steps = (np.resize(array, (steps * loop.batch_size, *array.shape[1:])) for array in (x, y))
        return {"x": x_steps, "y": y_steps, "batch_size": loop.batch_size}

    def fit(inputs):
        model.fit(**inputs, epochs=1, shuffle=False, verbose=0)

    warm_up, timed = data(loop.warmup_steps), data(loop.timed_steps)
    return loop.measure_call(lambda: fit(warm_up), lambda: fit(timed))


def cnn():
    channels, height, width = params["image_shape"]
    model = keras.Sequential([
        keras.Input(shape=(height, width, channels)),
        layers.Conv2D(50, 3, padding="same", activation="relu"), layers.Conv2D(50, 3, padding="same"),
        layers.MaxPooling2D(2), layers.ReLU(), layers.Dropout(0.25),
        layers.Conv2D(100, 3, padding="same", activation="relu"), layers.Conv2D(100, 3, padding="same"),
        layers.MaxPooling2D(2), layers.ReLU(), layers.Dropout(0.25),
        layers.Flatten(), layers.Dense(512, activation="relu"), layers.Dropout(0.5), layers.Dense(params["n_classes"]),
    ])
    optimizer = keras.optimizers.SGD(learning_rate=params["learning_rate"], momentum=params["momentum"])
    return train(model, optimizer, loop.images(layout="NHWC"), loop.labels())


def inference():
    """Keras' own ResNet-50 (keras.applications), not the notebook's hand-written one, so that the
    yardstick does not inherit the notebook's choices: the same Keras-applications layout, random
    weights (the speed does not depend on them), cut after the global average pool."""
    channels, height, width = params["image_shape"]
    model = keras.applications.ResNet50(weights=None, include_top=False, pooling="avg",
                                        input_shape=(height, width, channels))
    model.compile(jit_compile=JIT_COMPILE)
    # Backend tensors made once; predict_on_batch returns numpy, so each call has finished.
    images = keras.ops.convert_to_tensor(loop.images(layout="NHWC"))
    batches = [loop.batch(index, images) for index in range(clock.N_BATCHES)]
    return loop.measure(lambda index: model.predict_on_batch(batches[index % clock.N_BATCHES]))


def rnn():
    model = keras.Sequential([
        keras.Input(shape=(params["sequence_length"],), dtype="int32"),
        layers.Embedding(params["vocabulary_size"], params["embedding_dim"]),
        layers.GRU(params["hidden_units"]),  # the defaults, as the notebook: cuDNN's kernel where it can
        layers.Dense(params["n_classes"]),
    ])
    optimizer = keras.optimizers.Adam(learning_rate=params["learning_rate"], beta_1=params["beta_1"],
                                      beta_2=params["beta_2"], epsilon=params["epsilon"])
    return train(model, optimizer, loop.tokens(), loop.labels())


def fcn5():
    sizes = params["layer_sizes"]
    model = keras.Sequential([keras.Input(shape=(sizes[0],)),
                              *[layers.Dense(size, activation="sigmoid") for size in sizes[1:-1]],
                              layers.Dense(sizes[-1])])
    return train(model, keras.optimizers.SGD(learning_rate=params["learning_rate"]), loop.images(), loop.labels())


class GPT(keras.Model):
    """nanoGPT's shape from Keras' own layers (Keras ships no Transformer block): pre-LayerNorm
    blocks of a causal `MultiHeadAttention` and a 4x `Dense` MLP with exact GELU, the head tied to
    the token embedding."""

    def __init__(self):
        super().__init__()
        width, epsilon, dropout = params["n_embd"], params["layer_norm_epsilon"], params["dropout"]
        self.token_embedding = layers.Embedding(params["vocabulary_size"], width)
        self.position_embedding = layers.Embedding(params["block_size"], width)
        self.dropout = layers.Dropout(dropout)
        self.norms = [layers.LayerNormalization(epsilon=epsilon) for _ in range(2 * params["n_layer"] + 1)]
        self.attentions = [layers.MultiHeadAttention(params["n_head"], width // params["n_head"], dropout=dropout)
                           for _ in range(params["n_layer"])]
        self.residual_dropouts = [layers.Dropout(dropout) for _ in range(params["n_layer"])]
        self.mlps = [keras.Sequential([layers.Dense(4 * width, activation="gelu"), layers.Dense(width),
                                       layers.Dropout(dropout)]) for _ in range(params["n_layer"])]

    def call(self, tokens, training=None):
        positions = keras.ops.arange(keras.ops.shape(tokens)[1])
        x = self.dropout(self.token_embedding(tokens) + self.position_embedding(positions), training=training)
        for index, (attention, dropout, mlp) in enumerate(zip(self.attentions, self.residual_dropouts, self.mlps)):
            normed = self.norms[2 * index](x)
            x = x + dropout(attention(normed, normed, use_causal_mask=True, training=training), training=training)
            x = x + mlp(self.norms[2 * index + 1](x), training=training)
        return keras.ops.matmul(self.norms[-1](x), keras.ops.transpose(self.token_embedding.embeddings))


def gpt():
    # Keras' own AdamW (its epsilon-hat Adam step, which the notebook rewrites in PyTorch's form),
    # decay off for biases and LayerNorm as nanoGPT, clipping by the global norm.
    optimizer = keras.optimizers.AdamW(learning_rate=params["learning_rate"], beta_1=params["beta_1"],
                                       beta_2=params["beta_2"], epsilon=params["epsilon"],
                                       weight_decay=params["weight_decay"], global_clipnorm=params["grad_clip"])
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    return train(GPT(), optimizer, *loop.windows(dtype=np.int32))


loop.run({"CNN": cnn, "Inference": inference, "RNN": rnn, "FCN5": fcn5, "GPT": gpt})
