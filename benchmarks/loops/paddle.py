"""PaddlePaddle's plain loops in its dynamic graph (the notebooks' default variant): tensors on
the device once, gradients cleared by dropping them (`clear_grad(set_to_zero=False)`, as Paddle's
PyTorch-conversion guide maps `zero_grad(set_to_none=True)`), no per-step `.item()`, and
`paddle.no_grad` with `eval()` for inference."""
import warnings

import clock

loop = clock.start(("CNN", "Inference", "RNN", "FCN5", "GPT"))  # pins the threads before paddle is imported
warnings.filterwarnings("ignore", message="No ccache found")

import paddle  # noqa: E402
from paddle import nn  # noqa: E402

# No public thread API: Paddle's CPU kernels read FLAGS_paddle_num_threads (set by clock.start) at import.
paddle.set_device("cpu")
params = loop.params


def train(model, optimizer, x, y):
    x, y = paddle.to_tensor(x), paddle.to_tensor(y)
    loss_fn = nn.CrossEntropyLoss()
    model.train()

    def step(index):
        inputs, labels = loop.batch(index, x, y)
        # GPT's (batch, time, vocabulary) logits against (batch, time) targets: the last axis is the class.
        loss = loss_fn(model(inputs), labels)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad(set_to_zero=False)
        return loss

    return loop.measure(step)


def cnn():
    model = nn.Sequential(
        nn.Conv2D(3, 50, 3, padding="same"), nn.ReLU(),
        nn.Conv2D(50, 50, 3, padding="same"), nn.MaxPool2D(2), nn.ReLU(), nn.Dropout(0.25),
        nn.Conv2D(50, 100, 3, padding="same"), nn.ReLU(),
        nn.Conv2D(100, 100, 3, padding="same"), nn.MaxPool2D(2), nn.ReLU(), nn.Dropout(0.25),
        nn.Flatten(), nn.Linear(6400, 512), nn.ReLU(), nn.Dropout(0.5), nn.Linear(512, params["n_classes"]),
    )
    optimizer = paddle.optimizer.Momentum(learning_rate=params["learning_rate"], momentum=params["momentum"],
                                          parameters=model.parameters())
    return train(model, optimizer, loop.images(), loop.labels())


def inference():
    """Paddle's own ResNet-50 (paddle.vision.models), not the notebook's hand-written one, so that
    the yardstick does not inherit the notebook's choices: random weights (the speed does not
    depend on them), no classifier (num_classes=0), the features after its global average pool.
    Paddle's is ResNet v1.5 (the stride on the 3×3, about 5 % more work than v1's on the first 1×1),
    which if anything flatters the notebook."""
    model = nn.Sequential(paddle.vision.models.resnet50(num_classes=0), nn.Flatten())
    model.eval()
    x = paddle.to_tensor(loop.images())

    @paddle.no_grad()
    def step(index):
        return model(loop.batch(index, x))

    return loop.measure(step)


class GRUClassifier(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(params["vocabulary_size"], params["embedding_dim"])
        # One fused `rnn` op (could_use_cudnn holds on the CPU too), as in the notebook.
        self.gru = nn.GRU(params["embedding_dim"], params["hidden_units"])
        self.dense = nn.Linear(params["hidden_units"], params["n_classes"])

    def forward(self, tokens):
        return self.dense(self.gru(self.embedding(tokens))[1][-1])


def rnn():
    model = GRUClassifier()
    optimizer = paddle.optimizer.Adam(learning_rate=params["learning_rate"], beta1=params["beta_1"],
                                      beta2=params["beta_2"], epsilon=params["epsilon"], parameters=model.parameters())
    return train(model, optimizer, loop.tokens(dtype="int64"), loop.labels())


def fcn5():
    sizes = params["layer_sizes"]
    model = nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.Sigmoid(), nn.Linear(sizes[1], sizes[2]), nn.Sigmoid(),
                          nn.Linear(sizes[2], sizes[3]), nn.Sigmoid(), nn.Linear(sizes[3], sizes[4]))
    optimizer = paddle.optimizer.SGD(learning_rate=params["learning_rate"], parameters=model.parameters())
    return train(model, optimizer, loop.images(), loop.labels())


class GPT(nn.Layer):
    """nanoGPT's shape from Paddle's own layers: pre-LayerNorm (`normalize_before`)
    `nn.TransformerEncoderLayer`s with exact GELU under a causal mask, no dropout after the GELU
    (nanoGPT has none there), the head a matmul with the token embedding's weight (tied)."""

    def __init__(self):
        super().__init__()
        width, context = params["n_embd"], params["block_size"]
        self.token_embedding = nn.Embedding(params["vocabulary_size"], width)
        self.position_embedding = nn.Embedding(context, width)
        self.dropout = nn.Dropout(params["dropout"])
        layer = nn.TransformerEncoderLayer(width, params["n_head"], 4 * width, params["dropout"], activation="gelu",
                                           act_dropout=0.0, normalize_before=True,
                                           layer_norm_eps=params["layer_norm_epsilon"])
        self.blocks = nn.TransformerEncoder(layer, params["n_layer"])
        self.ln_f = nn.LayerNorm(width, epsilon=params["layer_norm_epsilon"])
        # Additive, as nn.Transformer.generate_square_subsequent_mask's (an instance method there).
        self.mask = paddle.triu(paddle.full([context, context], float("-inf")), diagonal=1)

    def forward(self, tokens):
        x = self.dropout(self.token_embedding(tokens) + self.position_embedding(paddle.arange(tokens.shape[1])))
        return paddle.matmul(self.ln_f(self.blocks(x, self.mask)), self.token_embedding.weight, transpose_y=True)


def gpt():
    model = GPT()
    decayed = {p.name for p in model.parameters() if p.ndim >= 2}
    optimizer = paddle.optimizer.AdamW(learning_rate=params["learning_rate"], beta1=params["beta_1"],
                                       beta2=params["beta_2"], epsilon=params["epsilon"], parameters=model.parameters(),
                                       weight_decay=params["weight_decay"], apply_decay_param_fun=lambda name: name in decayed,
                                       grad_clip=nn.ClipGradByGlobalNorm(params["grad_clip"]))
    return train(model, optimizer, *loop.windows())


loop.run({"CNN": cnn, "Inference": inference, "RNN": rnn, "FCN5": fcn5, "GPT": gpt})
