"""Which operations a bf16 training step really computes in bfloat16, from the framework's own
evidence, for the CNN's layers (a convolution, a max pool, a dense layer) and a GRU:

  pytorch   the dtype each layer returns under torch.autocast (forward hooks);
  jax       the operand types of the convolutions, dots and while loops in the training step as
            XLA compiled it for this machine (after its own passes, which may convert bf16 back).

Run in the framework's environment, e.g.
  ~/.cache/dl-rosetta/envs/torch-*/bin/python benchmarks/bf16_ops.py pytorch
  ~/.cache/dl-rosetta/envs/jax-*/bin/python benchmarks/bf16_ops.py jax
It prints one JSON line; docs/lessons.md quotes what it printed.
"""
import json
import re
import sys


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


if __name__ == "__main__":
    print(json.dumps({"pytorch": pytorch, "jax": jax}[sys.argv[1]]()))
