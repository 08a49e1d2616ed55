"""PyTorch: `torch.matmul` and `F.conv2d`, and for the RNN task its GRU (cuDNN's RNNs have a TF32
switch of their own), against the same GRU in float64."""
import torch
from torch import nn
from torch.nn import functional as F

from common import precision


def gru_outputs(device):
    """(float32, float64) outputs of one GRU on one fixed sequence, its weights common.precision's."""
    outputs = []
    for dtype in (torch.float32, torch.float64):
        gru = nn.GRU(16, 32, batch_first=True).to(device, dtype)
        with torch.no_grad():
            for offset, weight in enumerate(gru.parameters()):
                weight.copy_(torch.from_numpy(0.3 * precision.uniform(tuple(weight.shape), offset)))
            sequence = torch.from_numpy(precision.uniform((4, 8, 16), 99)).to(device, dtype)
            outputs.append(gru(sequence)[0].cpu().numpy())
    return tuple(outputs)


def measure(run):
    device = torch.device("cuda" if run.on_gpu else "cpu")

    def on_device(array):
        return torch.from_numpy(array).to(device)

    with torch.no_grad():
        return precision.checks(
            run.task, matmul=lambda a, b: (on_device(a) @ on_device(b)).cpu().numpy(),
            convolution=lambda x, w: F.conv2d(on_device(x), on_device(w)).cpu().numpy(),
            recurrent=(lambda: gru_outputs(device)) if run.task == "RNN" else None)
