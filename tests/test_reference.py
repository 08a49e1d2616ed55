"""The float64 numpy judge: its pieces against their definitions and finite differences, and the
training-parity bound against the mistakes it must catch."""
import numpy as np
import pytest

from common import numpy_models, reference


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
    out, _ = numpy_models.conv_forward(x, kernel, bias)
    np.testing.assert_allclose(out, naive_conv_same(x, kernel, bias), atol=1e-12)


def test_max_pool_takes_the_largest_of_each_2x2_and_routes_ties_to_one_pixel():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    out, winner = numpy_models.max_pool2_forward(x)
    np.testing.assert_array_equal(out[0, 0], [[5, 7], [13, 15]])
    tied = np.zeros((1, 1, 2, 2))
    _, winner = numpy_models.max_pool2_forward(tied)
    gradient = numpy_models.max_pool2_backward(np.ones((1, 1, 1, 1)), winner)
    np.testing.assert_array_equal(gradient[0, 0], [[1, 0], [0, 0]])


def numeric_gradient(loss, weights, name, index, step=1e-6):
    plus = {k: v.copy() for k, v in weights.items()}
    minus = {k: v.copy() for k, v in weights.items()}
    plus[name][index] += step
    minus[name][index] -= step
    return (loss(plus) - loss(minus)) / (2 * step)


def small_inputs(task):
    x, labels = reference.parity_batch(task)
    return (x[:2, :, :8, :8], labels[:2]) if task == "CNN" else (x[:2, -6:] if task == "RNN" else x[:2], labels[:2])


# GPT's numpy model has its own finite-difference tests (tests/test_numpy_gpt.py).
NUMPY_MODELS_TASKS = [task for task in reference.TASKS if task != "GPT"]


@pytest.mark.parametrize("task", NUMPY_MODELS_TASKS)
def test_backward_passes_agree_with_finite_differences(task):
    weights = {k: v.astype(np.float64) for k, v in reference.parity_weights(task).items()}
    if task == "CNN":  # an 8×8 image: dense1 sees 100·2·2 inputs
        weights["dense1/kernel"] = weights["dense1/kernel"][:400]
    x, labels = small_inputs(task)
    gradients = {"CNN": numpy_models.cnn_gradients, "RNN": numpy_models.gru_gradients,
                 "FCN5": numpy_models.fcn5_gradients}[task]
    _, grads = gradients(weights, x, labels)

    def loss(w):
        return gradients(w, x, labels)[0]

    rng = np.random.default_rng(1)
    names = [name for name in weights if name != "embedding/embeddings"]
    if task == "RNN":
        names.append("embedding/embeddings")
    for name in names:
        index = tuple(rng.integers(0, size) for size in weights[name].shape)
        if name == "embedding/embeddings":
            index = (int(x[0, -1]), 3)  # a row the batch uses
        assert grads[name][index] == pytest.approx(numeric_gradient(loss, weights, name, index), rel=1e-4, abs=1e-9), name


def test_initial_weights_are_glorot_with_zero_biases_and_the_2018_parameter_count():
    weights = reference.initial_weights("CNN")
    assert weights["conv1/kernel"].shape == (3, 3, 3, 50) and weights["dense1/kernel"].shape == (6400, 512)
    limit = np.sqrt(6 / (9 * 3 + 9 * 50))
    assert 0.9 * limit < np.abs(weights["conv1/kernel"]).max() <= limit
    assert all(not weights[f"{layer}/bias"].any() for layer in reference.CNN_LAYERS)
    assert sum(w.size for w in weights.values()) == 3441592  # the 2018 model's parameter count
    gru = reference.initial_weights("RNN")
    np.testing.assert_allclose(gru["gru/U_z"] @ gru["gru/U_z"].T, np.eye(100), atol=1e-5)
    assert reference.initial_weights("FCN5")["dense2/kernel"].shape == (2048, 4096)
    np.testing.assert_array_equal(weights["conv3/kernel"], reference.initial_weights("CNN")["conv3/kernel"])


def test_parity_weights_have_nonzero_biases_everywhere_and_the_same_kernels():
    for task in NUMPY_MODELS_TASKS:  # GPT's parity model is smaller than its task's (tests/test_numpy_gpt.py)
        start, parity = reference.initial_weights(task), reference.parity_weights(task)
        for name in start:
            is_bias = name.endswith("bias") or name.split("/")[1][:2] in ("b_", "c_")
            assert (np.abs(parity[name]) > 0).all() if is_bias else np.array_equal(parity[name], start[name]), name


def test_parity_batches_are_fixed_labelled_and_padded():
    images, labels = reference.parity_batch("CNN")
    assert images.shape == (reference.PARITY_BATCH_SIZE, 3, 32, 32) and images.dtype == np.float32
    assert labels.dtype == np.int64 and len(set(labels)) == reference.PARITY_BATCH_SIZE
    tokens, _ = reference.parity_batch("RNN")
    assert tokens.shape == (reference.PARITY_BATCH_SIZE, 150) and tokens[-1, 0] == 0
    np.testing.assert_array_equal(tokens, reference.parity_batch("RNN")[0])
    # A channels-last framework takes the same images, transposed.
    np.testing.assert_array_equal(reference.parity_batch("CNN", layout="NHWC")[0], images.transpose(0, 2, 3, 1))
    with pytest.raises(ValueError, match="valid"):
        reference.parity_batch("Inference")
    with pytest.raises(ValueError, match="valid: NCHW, NHWC"):
        reference.parity_batch("CNN", layout="HWC")


def test_gpt_parity_steps_clip_the_gradient_on_some_steps_and_not_on_others():
    """Every GPT parity step on its batch; the pre-clip global norm in float64 well above the clipping
    threshold on some steps and well below it on the others, so that the clipping, its threshold and
    AdamW's moments each change the steps (runner.broken_copies' copies, ten times the bound and more)."""
    batches = reference.parity_batches("GPT")
    assert len(batches) == reference.parity_steps_of("GPT") >= 10
    tokens, targets = reference.parity_batch("GPT")
    np.testing.assert_array_equal(batches[0][0], tokens)
    assert all(x.dtype == np.int32 and y.dtype == np.int64 for x, y in batches)
    assert len({x.tobytes() for x, _ in batches}) > len(batches) // 3  # the clipped ones each their own
    weights = {name: value.astype(np.float64) for name, value in reference.parity_weights("GPT").items()}
    losses, logits, norms = reference.gpt_parity_steps(weights)
    threshold = reference.gpt_parity_params()["grad_clip"]
    above, below = norms[norms > threshold], norms[norms <= threshold]
    assert len(above) >= 3 and len(below) >= 3
    assert above.min() > 1.1 * threshold and below.max() < 0.9 * threshold
    np.testing.assert_array_equal(losses, reference.reference_training("GPT")[0])


def steps_with(task, weights, optimiser=None):
    """The reference's PARITY_STEPS in float64 from `weights`, optionally with another optimiser."""
    return reference.parity_steps(task, weights, optimiser=optimiser)


def test_the_reference_passes_its_own_check_and_float32_is_far_inside_the_bound():
    for task in reference.TASKS:
        losses, logits = reference.reference_training(task)
        assert reference.train_parity_error(task, losses, logits) == 0.0
        losses32, logits32 = reference._reference_training(task, "float32")
        assert reference.train_parity_error(task, losses32, logits32) < reference.TRAIN_PARITY_TOLERANCE[task] / 10


@pytest.mark.parametrize("task, name", [("CNN", "conv2/bias"), ("CNN", "dense1/bias"), ("RNN", "gru/b_z"),
                                        ("RNN", "gru/c_n"), ("RNN", "gru/c_r"), ("FCN5", "dense2/bias"),
                                        ("GPT", "block1/mlp/fc/bias"), ("GPT", "ln_f/offset")])
def test_a_wrong_bias_mapping_fails_parity(task, name):
    weights = reference.parity_weights(task)
    swapped = weights[name].copy()
    swapped[[0, 1]] = swapped[[1, 0]]
    weights[name] = swapped
    assert reference.train_parity_error(task, *steps_with(task, weights)) > reference.TRAIN_PARITY_TOLERANCE[task]


def test_the_candidates_recurrent_bias_outside_the_reset_product_fails_parity():
    """The `reset_after=False`-style mistake: c_n added outside r * (h U_n)."""
    weights = reference.parity_weights("RNN")
    moved = dict(weights, **{"gru/b_n": weights["gru/b_n"] + weights["gru/c_n"],
                             "gru/c_n": np.zeros_like(weights["gru/c_n"])})
    assert reference.train_parity_error("RNN", *steps_with("RNN", moved)) > reference.TRAIN_PARITY_TOLERANCE["RNN"]


def test_a_wrong_optimiser_fails_parity():
    params = reference.get_params("CNN")
    no_momentum = lambda w, g, s: numpy_models.sgd(w, g, s, params["learning_rate"], 0.0)
    assert reference.train_parity_error("CNN", *steps_with("CNN", reference.parity_weights("CNN"), no_momentum)) > 1e-2
    rnn = reference.get_params("RNN")
    sgd_not_adam = lambda w, g, s: numpy_models.sgd(w, g, s, rnn["learning_rate"])
    assert reference.train_parity_error("RNN", *steps_with("RNN", reference.parity_weights("RNN"), sgd_not_adam)) > 1e-3


def test_train_parity_checks_shapes_and_records_its_bound():
    losses, logits = reference.reference_training("RNN")
    checks = reference.train_parity("RNN", losses + 1e-5, logits)
    assert checks["train_parity_max_abs_error"] == pytest.approx(1e-5)
    assert checks["train_parity_tolerance"] == reference.TRAIN_PARITY_TOLERANCE["RNN"]
    with pytest.raises(ValueError, match="step losses"):
        reference.train_parity_error("RNN", losses[:2], logits)
    with pytest.raises(ValueError, match="shape"):
        reference.train_parity_error("RNN", losses, logits[:2])


def test_both_published_adam_forms_are_recognised_and_recorded():
    """TensorFlow/Keras, MXNet, Chainer and Lasagne implement Adam's "efficient" form, PyTorch,
    optax and PaddlePaddle the paper's Algorithm 1: both pass, each named in the record, and they
    differ by more than the bound, so neither passes for the other."""
    efficient = reference.reference_training("RNN", adam_form="efficient")
    paper = reference.reference_training("RNN")
    assert reference.train_parity_error("RNN", *efficient) > reference.TRAIN_PARITY_TOLERANCE["RNN"]
    assert reference.train_parity("RNN", *efficient)["adam_form"] == "efficient"
    assert reference.train_parity("RNN", *paper)["adam_form"] == "paper"
    assert "adam_form" not in reference.train_parity("CNN", *reference.reference_training("CNN"))


def test_fcn5_training_trajectory_is_cached_and_tells_a_wrong_learning_rate(tmp_path, monkeypatch):
    """FCN5's quality check: the whole run's epoch-mean losses against float32 numpy's (cached in
    the data cache under the code that computes them too); the same run passes exactly, a learning
    rate 10 % off fails the bound."""
    from common import data
    from common.params import get_params

    monkeypatch.setenv("ROSETTA_CACHE", str(tmp_path))
    dataset = data.load_mnist(64, 16, data="synthetic")
    params = dict(get_params("FCN5", "smoke"), batch_size=16, epochs=2)
    expected = reference.training_trajectory("FCN5", params, dataset)
    assert len(expected) == 2 and len(list(tmp_path.rglob("FCN5-*.json"))) == 1
    assert reference.training_trajectory("FCN5", params, dataset) == expected  # read from the cache
    # Changed code is not answered from the cache: the trajectory is computed again, beside the first.
    with monkeypatch.context() as patch:
        patch.setattr(reference, "trajectory_code", lambda: b"numpy_models as edited")
        assert reference.training_trajectory("FCN5", params, dataset) == expected
    assert len(list(tmp_path.rglob("FCN5-*.json"))) == 2
    assert reference.train_trajectory("FCN5", params, dataset, expected)["train_trajectory_max_abs_error"] == 0
    wrong = reference.training_trajectory("FCN5", dict(params, learning_rate=0.055), dataset)
    error = reference.train_trajectory("FCN5", params, dataset, wrong)["train_trajectory_max_abs_error"]
    assert error > reference.TRAIN_TRAJECTORY_TOLERANCE
    with pytest.raises(ValueError, match="no training trajectory"):
        reference.training_trajectory("CNN", params, dataset)


def test_the_float64_parity_steps_are_cached_by_the_code_that_computes_them(tmp_path, monkeypatch):
    """Every CNN notebook and variant asks for numpy's parity steps: computed once, then read back
    exactly, and computed afresh when that code changes."""
    monkeypatch.setenv("ROSETTA_CACHE", str(tmp_path))
    computed = reference.parity_steps("RNN", reference.parity_weights("RNN"), "float64")
    reference._reference_training.cache_clear()
    first = reference._reference_training("RNN", "float64")
    reference._reference_training.cache_clear()
    read_back = reference._reference_training("RNN", "float64")
    assert len(list(tmp_path.rglob("parity-RNN-*.json"))) == 1
    for expected, got, again in zip(computed, first, read_back):
        assert np.array_equal(expected, got) and np.array_equal(expected, again)
    with monkeypatch.context() as patch:
        patch.setattr(reference, "trajectory_code", lambda: b"numpy_models as edited")
        reference._reference_training.cache_clear()
        reference._reference_training("RNN", "float64")
    assert len(list(tmp_path.rglob("parity-RNN-*.json"))) == 2
    reference._reference_training.cache_clear()
