import numpy as np
import pytest

from common import reference


def naive_conv_same(x, kernel, bias):
    """Direct loops over output pixels: the slow definition the fast reference must equal."""
    kh, kw, _, n_out = kernel.shape
    padded = np.pad(x, ((0, 0), (0, 0), (kh // 2,) * 2, (kw // 2,) * 2))
    n, _, height, width = x.shape
    out = np.zeros((n, n_out, height, width))
    for i in range(height):
        for j in range(width):
            window = padded[:, :, i:i + kh, j:j + kw]  # (n, c, kh, kw)
            out[:, :, i, j] = np.einsum("nchw,hwco->no", window, kernel) + bias
    return out


def test_convolution_matches_the_direct_definition():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 6, 5))
    kernel = rng.normal(size=(3, 3, 3, 4))
    bias = rng.normal(size=4)
    np.testing.assert_allclose(reference._conv_same(x, kernel, bias), naive_conv_same(x, kernel, bias), atol=1e-12)


def test_max_pool_takes_the_largest_of_each_2x2():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(reference._max_pool2(x)[0, 0], [[5, 7], [13, 15]])


def test_cnn_weights_are_glorot_uniform_with_zero_biases_and_deterministic():
    weights = reference.cnn_weights()
    assert weights["conv1/kernel"].shape == (3, 3, 3, 50)
    assert weights["dense1/kernel"].shape == (6400, 512)
    limit = np.sqrt(6 / (9 * 3 + 9 * 50))
    assert np.abs(weights["conv1/kernel"]).max() <= limit
    assert np.abs(weights["conv1/kernel"]).max() > 0.9 * limit
    assert all(not weights[f"{layer}/bias"].any() for layer in reference.CNN_LAYERS)
    np.testing.assert_array_equal(weights["conv3/kernel"], reference.cnn_weights()["conv3/kernel"])
    assert sum(w.size for w in weights.values()) == 3441592  # the 2018 model's parameter count


def test_gru_reference_equals_a_hand_unrolled_step():
    weights = reference.gru_weights()
    tokens = np.array([[0, 5, 7]])
    logits = reference.gru_forward(weights, tokens)
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    sigmoid = lambda v: 1 / (1 + np.exp(-v))
    h = np.zeros(100)
    for token in tokens[0]:
        x = w["embedding/embeddings"][token]
        r = sigmoid(x @ w["gru/W_r"] + h @ w["gru/U_r"])
        z = sigmoid(x @ w["gru/W_z"] + h @ w["gru/U_z"])
        n = np.tanh(x @ w["gru/W_n"] + r * (h @ w["gru/U_n"]))
        h = (1 - z) * n + z * h
    np.testing.assert_allclose(logits[0], h @ w["dense/kernel"], atol=1e-12)


def test_parity_batches_are_fixed_and_padded():
    images = reference.parity_batch("CNN")
    assert images.shape == (reference.PARITY_BATCH_SIZE, 3, 32, 32) and images.dtype == np.float32
    tokens = reference.parity_batch("RNN")
    assert tokens.shape == (reference.PARITY_BATCH_SIZE, 150) and tokens[-1, 0] == 0
    np.testing.assert_array_equal(tokens, reference.parity_batch("RNN"))


def test_parity_error_measures_the_difference_and_checks_the_shape():
    expected = reference.reference_logits("RNN")
    assert reference.parity_error("RNN", expected) == 0.0
    shifted = expected.copy()
    shifted[3, 1] += 0.5
    assert reference.parity_error("RNN", shifted) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="shape"):
        reference.parity_error("RNN", expected[:2])
    with pytest.raises(ValueError, match="valid"):
        reference.parity_batch("FCN5")
