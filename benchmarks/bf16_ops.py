"""Which operations a bf16 training step really computes in bfloat16, from the framework's own
evidence, for the CNN's layers (a convolution, a max pool, a dense layer) and a GRU:

  pytorch   the dtype each layer returns under torch.autocast (forward hooks);
  jax       the operand types of the convolutions, dots and while loops in the training step as
            XLA compiled it for this machine (after its own passes, which may convert bf16 back);

and, for FCN5's dense step (matrix products, sigmoid, softmax cross-entropy, SGD with momentum) as
its notebook writes it, the kernels oneDNN itself reports running (ONEDNN_VERBOSE=1) with their
data types and implementation (e.g. brg_matmul:avx512_core_bf16):

  pytorch-dense      torch.autocast, as PyTorch_FCN5;
  tensorflow-dense   float32 variables cast to bfloat16 where used, as Tensorflow_FCN5.

Run in the framework's environment, e.g.
  ~/.cache/dl-rosetta/envs/torch-*/bin/python benchmarks/bf16_ops.py pytorch
  ~/.cache/dl-rosetta/envs/jax-*/bin/python benchmarks/bf16_ops.py jax
  ~/.cache/dl-rosetta/envs/tensorflow-*/bin/python benchmarks/bf16_ops.py tensorflow-dense
It prints one JSON line; docs/lessons.md quotes what it printed.
"""
import json
import os
import re
import subprocess
import sys

DENSE_SIZES, DENSE_BATCH = (784, 256, 10), 64


def pytorch():
    import torch
    from torch import nn

    model = nn.ModuleDict({"conv": nn.Conv2d(3, 8, 3, padding=1), "pool": nn.MaxPool2d(2),
                           "dense": nn.Linear(8 * 4 * 4, 10), "gru": nn.GRU(10, 16, batch_first=True)})
    found = {}

    def record_dtype(name):
        def hook(layer, inputs, output):
            found[name] = str((output[0] if isinstance(output, tuple) else output).dtype).removeprefix("torch.")
        return hook

    for name, layer in model.items():
        layer.register_forward_hook(record_dtype(name))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        x = model["pool"](model["conv"](torch.randn(2, 3, 8, 8)))
        logits = model["dense"](x.flatten(1))
        model["gru"](logits.float().unsqueeze(1))
    return {"framework": "pytorch", "version": torch.__version__, "layer outputs under autocast": found}


def jax():
    import jax
    import jax.numpy as jnp

    def loss(params, x):
        y = jax.lax.conv_general_dilated(x.astype(jnp.bfloat16), params["kernel"].astype(jnp.bfloat16), (1, 1), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        logits = y.reshape(len(y), -1) @ params["dense"].astype(jnp.bfloat16)
        return jnp.mean(logits.astype(jnp.float32) ** 2)

    params = {"kernel": jnp.ones((3, 3, 3, 8)), "dense": jnp.ones((8 * 4 * 4, 10))}
    compiled = jax.jit(jax.grad(loss)).lower(params, jnp.ones((2, 8, 8, 3))).compile().as_text()
    operations = {}
    for kind in ("convolution", "dot"):
        for line in compiled.splitlines():
            if re.search(rf"= \S+ {kind}\(", line):
                operands = re.findall(r"(bf16|f32)\[", line.split(f"{kind}(", 1)[1])
                operations.setdefault(kind, []).append("bf16" if operands and set(operands) == {"bf16"} else "f32")
    return {"framework": "jax", "version": jax.__version__, "backend": jax.default_backend(),
            "operand types of the compiled step": {kind: sorted(set(types)) for kind, types in operations.items()}}


def pytorch_dense_step():
    import torch
    from torch import nn

    model = nn.Sequential(nn.Linear(DENSE_SIZES[0], DENSE_SIZES[1]), nn.Sigmoid(), nn.Linear(DENSE_SIZES[1], DENSE_SIZES[2]))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = torch.randn(DENSE_BATCH, DENSE_SIZES[0]), torch.randint(0, DENSE_SIZES[2], (DENSE_BATCH,))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return torch.__version__


def tensorflow_dense_step():
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    import tensorflow as tf

    kernels = [tf.Variable(tf.random.normal((n_in, n_out)) * 0.05) for n_in, n_out in zip(DENSE_SIZES, DENSE_SIZES[1:])]
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            hidden = tf.sigmoid(tf.matmul(tf.cast(x, tf.bfloat16), tf.cast(kernels[0], tf.bfloat16)))
            logits = tf.cast(tf.matmul(hidden, tf.cast(kernels[1], tf.bfloat16)), tf.float32)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        optimizer.apply_gradients(zip(tape.gradient(loss, kernels), kernels))

    step(tf.random.normal((DENSE_BATCH, DENSE_SIZES[0])), tf.zeros(DENSE_BATCH, tf.int32))
    return tf.__version__


DENSE_STEPS = {"pytorch-dense": pytorch_dense_step, "tensorflow-dense": tensorflow_dense_step}


def onednn_kernels(name):
    """Run `name`'s dense step in a child with ONEDNN_VERBOSE=1 (read when oneDNN loads) and sum up
    the primitives oneDNN says it executed: kind, implementation and the data types of their memories."""
    child = subprocess.run([sys.executable, __file__, name, "--step"], capture_output=True, text=True, check=True,
                           env={**os.environ, "ONEDNN_VERBOSE": "1"})
    kernels = set()
    for line in child.stdout.splitlines():
        fields = line.split(",")
        if not line.startswith("onednn_verbose") or "exec" not in fields or "cpu" not in fields:
            continue
        kind, implementation = fields[fields.index("cpu") + 1: fields.index("cpu") + 3]
        memories = next((field for field in fields if re.search(r"\b(src|wei|dst)[_:]", field)), "")
        types = "/".join(f"{memory}:{dtype}" for memory, dtype in re.findall(r"\b(src|wei|dst)[_:](\w+?):", memories))
        kernels.add(f"{kind} {implementation} ({types})")
    # Python's and oneDNN's buffers are flushed at exit in either order.
    version = [line for line in child.stdout.splitlines() if line and not line.startswith("onednn_verbose")][-1]
    return {"framework": name, "version": version, "oneDNN kernels run": sorted(kernels) or
            "none (the step ran on the framework's own or MKL kernels, which oneDNN does not log)"}


if __name__ == "__main__":
    if sys.argv[1:] and sys.argv[1] in DENSE_STEPS:
        if "--step" in sys.argv:
            print(DENSE_STEPS[sys.argv[1]]())
        else:
            print(json.dumps(onednn_kernels(sys.argv[1])))
    else:
        print(json.dumps({"pytorch": pytorch, "jax": jax}[sys.argv[1]]()))
