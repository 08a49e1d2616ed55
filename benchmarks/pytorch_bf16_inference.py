"""PyTorch ResNet-50 inference on the CPU, batch 32, 2 threads, side by side in one sitting: the
Inference notebook's bf16 path (autocast entered per call, channels-last, conv biases as in Keras'
ResNet50) against a model without conv biases, the whole model cast to bfloat16, and fp32 with batch
norm folded into the convolutions (torch.jit.freeze) (issue 25). Run in the torch environment:
    python benchmarks/pytorch_bf16_inference.py [rounds]"""
import sys
import time
from collections import OrderedDict
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common.params import get_params  # noqa: E402
from common.resnet_weights import STAGES  # noqa: E402

torch.set_num_threads(2)
EPSILON, BATCH = (get_params("Inference")[name] for name in ("bn_epsilon", "batch_size"))  # the notebook's

class Bottleneck(nn.Module):
    def __init__(self, n_in, filters, stride, bias):
        super().__init__()
        layers = {"1": (n_in, filters, 1, stride), "2": (filters, filters, 3, 1), "3": (filters, 4 * filters, 1, 1)}
        if stride != 1 or n_in != 4 * filters:
            layers["0"] = (n_in, 4 * filters, 1, stride)
        for name, (a, b, k, s) in layers.items():
            self.add_module(f"{name}_conv", nn.Conv2d(a, b, k, stride=s, padding=k // 2, bias=bias))
            self.add_module(f"{name}_bn", nn.BatchNorm2d(b, eps=EPSILON))
        self.has_shortcut = "0" in layers
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        layers = dict(self.named_children())
        shortcut = layers["0_bn"](layers["0_conv"](x)) if self.has_shortcut else x
        out = self.relu(layers["1_bn"](layers["1_conv"](x)))
        out = self.relu(layers["2_bn"](layers["2_conv"](out)))
        out = layers["3_bn"](layers["3_conv"](out))
        return self.relu(out + shortcut)

def create(bias=True):
    m = {"conv1_conv": nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=bias), "conv1_bn": nn.BatchNorm2d(64, eps=EPSILON),
         "conv1_relu": nn.ReLU(inplace=True), "pool1_pool": nn.MaxPool2d(3, stride=2, padding=1)}
    n_in = 64
    for stage, n_blocks, filters in STAGES:
        for block in range(1, n_blocks + 1):
            m[f"conv{stage}_block{block}"] = Bottleneck(n_in, filters, 2 if block == 1 and stage > 2 else 1, bias)
            n_in = 4 * filters
    m["avg_pool"] = nn.AdaptiveAvgPool2d(1); m["flatten"] = nn.Flatten()
    return nn.Sequential(OrderedDict(m)).to(memory_format=torch.channels_last).eval()

x = torch.randn(BATCH, 3, 224, 224).contiguous(memory_format=torch.channels_last)
model = create()
nobias = create(bias=False)
bf16_model = create().to(torch.bfloat16)
xb = x.to(torch.bfloat16)
with torch.no_grad():
    frozen = torch.jit.freeze(torch.jit.trace(create(), x))

def per_call(m):
    def f():
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            return m(x)
    return f

cases = {
    "fp32": lambda: model(x),
    "autocast per call (notebook)": per_call(model),
    "autocast per call, no conv bias": per_call(nobias),
    "model.to(bfloat16), bf16 input": lambda: bf16_model(xb),
    "jit.freeze (BN folded) fp32": lambda: frozen(x),
}
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
rates = {name: [] for name in cases}
with torch.inference_mode():
    for name, f in cases.items():
        f(); f()
    for _ in range(rounds):
        for name, f in cases.items():
            s = time.perf_counter()
            for _ in range(3):
                f()
            rates[name].append(3 * BATCH / (time.perf_counter() - s))
for name, r in rates.items():
    print(f"{name:36s} {max(r):7.1f} img/s  ({', '.join(f'{v:.1f}' for v in r)})")
