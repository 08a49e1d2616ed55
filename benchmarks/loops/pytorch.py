"""PyTorch's plain loops, as its performance tuning guide writes them: channels-last convolutions,
gradients set to None, no `.item()` per step, `inference_mode` for inference."""
import clock

loop = clock.start(("CNN", "Inference", "RNN", "FCN5", "GPT"), bf16_tasks=("Inference",))  # pins the threads before torch is imported

import torch  # noqa: E402
from torch import nn  # noqa: E402

torch.set_num_threads(loop.threads)
params = loop.params


def train(model, optimizer, x, y, memory_format=torch.contiguous_format, clip=None):
    x, y = torch.from_numpy(x).contiguous(memory_format=memory_format), torch.from_numpy(y)
    loss_fn = nn.CrossEntropyLoss()
    model.train()

    def step(index):
        inputs, labels = loop.batch(index, x, y)
        optimizer.zero_grad(set_to_none=True)
        logits = model(inputs)
        loss = loss_fn(logits.flatten(0, -2), labels.flatten()) if labels.dim() > 1 else loss_fn(logits, labels)
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        return loss

    return loop.measure(step)


def cnn():
    model = nn.Sequential(
        nn.Conv2d(3, 50, 3, padding="same"), nn.ReLU(),
        nn.Conv2d(50, 50, 3, padding="same"), nn.MaxPool2d(2), nn.ReLU(), nn.Dropout(0.25),
        nn.Conv2d(50, 100, 3, padding="same"), nn.ReLU(),
        nn.Conv2d(100, 100, 3, padding="same"), nn.MaxPool2d(2), nn.ReLU(), nn.Dropout(0.25),
        nn.Flatten(), nn.Linear(6400, 512), nn.ReLU(), nn.Dropout(0.5), nn.Linear(512, params["n_classes"]),
    ).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=params["learning_rate"], momentum=params["momentum"])
    return train(model, optimizer, loop.images(), loop.labels(), torch.channels_last)


class Bottleneck(nn.Module):
    def __init__(self, n_in, filters, stride, epsilon):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(n_in, filters, 1, stride), nn.BatchNorm2d(filters, eps=epsilon), nn.ReLU(inplace=True),
            nn.Conv2d(filters, filters, 3, padding=1), nn.BatchNorm2d(filters, eps=epsilon), nn.ReLU(inplace=True),
            nn.Conv2d(filters, 4 * filters, 1), nn.BatchNorm2d(4 * filters, eps=epsilon))
        self.shortcut = (nn.Sequential(nn.Conv2d(n_in, 4 * filters, 1, stride), nn.BatchNorm2d(4 * filters, eps=epsilon))
                         if stride != 1 or n_in != 4 * filters else nn.Identity())

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


def inference():
    epsilon = params["bn_epsilon"]
    layers = [nn.Conv2d(3, 64, 7, 2, 3), nn.BatchNorm2d(64, eps=epsilon), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    n_in = 64
    for stage, n_blocks, filters in ((2, 3, 64), (3, 4, 128), (4, 6, 256), (5, 3, 512)):
        for block in range(n_blocks):
            layers.append(Bottleneck(n_in, filters, 2 if block == 0 and stage > 2 else 1, epsilon))
            n_in = 4 * filters
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten()).to(memory_format=torch.channels_last).eval()
    x = torch.from_numpy(loop.images()).contiguous(memory_format=torch.channels_last)

    @torch.inference_mode()
    def step(index):
        # --bf16: autocast, as the performance tuning guide advises for CPUs with AMX or AVX-512 BF16
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=loop.bf16):
            return model(loop.batch(index, x))

    return loop.measure(step)


class GRUClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(params["vocabulary_size"], params["embedding_dim"])
        self.gru = nn.GRU(params["embedding_dim"], params["hidden_units"], batch_first=True)
        self.dense = nn.Linear(params["hidden_units"], params["n_classes"])

    def forward(self, tokens):
        return self.dense(self.gru(self.embedding(tokens))[1][-1])


def rnn():
    model = GRUClassifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=params["learning_rate"],
                                 betas=(params["beta_1"], params["beta_2"]), eps=params["epsilon"])
    return train(model, optimizer, loop.tokens(dtype="int64"), loop.labels())


def fcn5():
    sizes = params["layer_sizes"]
    model = nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.Sigmoid(), nn.Linear(sizes[1], sizes[2]), nn.Sigmoid(),
                          nn.Linear(sizes[2], sizes[3]), nn.Sigmoid(), nn.Linear(sizes[3], sizes[4]))
    optimizer = torch.optim.SGD(model.parameters(), lr=params["learning_rate"])
    return train(model, optimizer, loop.images(), loop.labels())


class GPT(nn.Module):
    """nanoGPT's shape from PyTorch's own layers: pre-LayerNorm `nn.TransformerEncoderLayer`s with
    exact GELU under a causal mask (its fused attention path), the head tied to the embedding."""

    def __init__(self):
        super().__init__()
        width, context = params["n_embd"], params["block_size"]
        self.token_embedding = nn.Embedding(params["vocabulary_size"], width)
        self.position_embedding = nn.Embedding(context, width)
        layer = nn.TransformerEncoderLayer(width, params["n_head"], 4 * width, params["dropout"], activation="gelu",
                                           layer_norm_eps=params["layer_norm_epsilon"], batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, params["n_layer"], enable_nested_tensor=False)
        self.ln_f = nn.LayerNorm(width, eps=params["layer_norm_epsilon"])
        self.head = nn.Linear(width, params["vocabulary_size"], bias=False)
        self.head.weight = self.token_embedding.weight
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(context))

    def forward(self, tokens):
        x = self.token_embedding(tokens) + self.position_embedding(torch.arange(tokens.shape[1]))
        return self.head(self.ln_f(self.blocks(x, mask=self.mask, is_causal=True)))


def gpt():
    model = GPT()
    decayed = [p for p in model.parameters() if p.dim() >= 2]
    undecayed = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decayed, "weight_decay": params["weight_decay"]},
                                   {"params": undecayed, "weight_decay": 0.0}], lr=params["learning_rate"],
                                  betas=(params["beta_1"], params["beta_2"]), eps=params["epsilon"])
    return train(model, optimizer, *loop.windows(), clip=params["grad_clip"])


loop.run({"CNN": cnn, "Inference": inference, "RNN": rnn, "FCN5": fcn5, "GPT": gpt})
