import pytest

from common import params


def test_full_profile_holds_the_2018_hyper_parameters():
    cnn = params.get_params("CNN", "full")
    assert (cnn["batch_size"], cnn["epochs"], cnn["learning_rate"], cnn["momentum"]) == (64, 10, 0.01, 0.9)
    assert (cnn["n_train"], cnn["n_test"]) == (50000, 10000)
    rnn = params.get_params("RNN", "full")
    assert (rnn["vocabulary_size"], rnn["sequence_length"], rnn["embedding_dim"], rnn["hidden_units"]) == (30000, 150, 125, 100)
    assert (rnn["batch_size"], rnn["epochs"], rnn["learning_rate"], rnn["epsilon"]) == (64, 3, 1e-3, 1e-8)
    inference = params.get_params("Inference", "full")
    assert (inference["batch_size"], inference["n_batches"], inference["bn_epsilon"]) == (32, 40, 1e-3)
    fcn5 = params.get_params("FCN5")
    assert (fcn5["layer_sizes"], fcn5["batch_size"], fcn5["learning_rate"]) == ((784, 2048, 4096, 1024, 10), 1024, 0.05)
    assert params.get_params("MultiGPU")["learning_rate"] == 1e-4


@pytest.mark.parametrize("task", params.TASKS)
def test_smaller_profiles_change_only_sizes(task):
    full = params.get_params(task, "full")
    for profile in ("quick", "smoke"):
        smaller = params.get_params(task, profile)
        assert smaller.keys() == full.keys()
        for name in ("learning_rate", "momentum", "n_classes", "hidden_units", "embedding_dim"):
            assert smaller.get(name) == full.get(name)


def test_profiles_shrink_the_work():
    sizes = [params.get_params("CNN", p)["n_train"] * params.get_params("CNN", p)["epochs"]
             for p in ("full", "quick", "smoke")]
    assert sizes == sorted(sizes, reverse=True)


def test_returned_dict_is_a_copy():
    params.get_params("CNN")["epochs"] = 99
    assert params.get_params("CNN")["epochs"] == 10


@pytest.mark.parametrize("task, profile", [("GAN", "full"), ("CNN", "huge")])
def test_unknown_names_list_the_valid_ones(task, profile):
    with pytest.raises(ValueError, match="valid"):
        params.get_params(task, profile)


def test_one_function_decides_a_runs_parameters():
    """The harness and the runner's failed records both call params.run_params."""
    smoke, short = params.run_params("CNN", "smoke", "bf16", threads=1, cores=2)
    assert short and smoke["n_train"] == params.SHORT_RUN["CNN"]["n_train"] and smoke["accuracy_run"] is False
    default, short = params.run_params("CNN", "smoke", "default", threads=1, cores=2)
    assert not short and default == params.get_params("CNN", "smoke")
    emulated, short = params.run_params("RNN", "quick", "bf16", threads=2, cores=2, emulated=True)
    assert short and emulated["n_train"] == params.SHORT_RUN["RNN"]["n_train"]
    narrow, _ = params.run_params("FCN5", "quick", "default", threads=1, cores=2)
    every, _ = params.run_params("FCN5", "quick", "default", threads=2, cores=2)
    quick = params.get_params("FCN5", "quick")
    assert (narrow["n_train"], narrow["epochs"], narrow["accuracy_run"]) == (quick["sweep_n_train"], quick["sweep_epochs"], False)
    assert (every["n_train"], every["epochs"], every["accuracy_run"]) == (quick["n_train"], quick["epochs"], True)
    assert "sweep_n_train" not in every
    pipeline, _ = params.run_params("MultiGPU", "quick", "default", 2, 2, pipeline="disk", devices=2)
    assert (pipeline["pipeline"], pipeline["devices"]) == ("disk", 2)
