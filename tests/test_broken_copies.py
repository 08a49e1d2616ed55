"""The far side of every bound: deliberately broken copies make their check fail by a wide margin,
a broken data-parallel engine makes its MultiGPU record invalid, and the margins table reports
both sides of every bound."""
import json

import pytest

from common import reference
from runner import broken_copies, margins, report, verdict

# The smallest margin above the bound a broken copy must keep (runner.margins).
NEEDED = {check: margins.MIN_MARGIN[check] for check in ("MultiGPU equivalence", "MultiGPU replicas")}


@pytest.fixture(scope="module")
def trajectory_and_parity():
    return broken_copies.parity_copies() + broken_copies.trajectory_copies()


def test_every_training_copy_breaks_its_check_by_ten_times_its_bound(trajectory_and_parity):
    checks = {check for check, _, _, _ in trajectory_and_parity}
    assert checks == {"training parity, CNN", "training parity, RNN", "training parity, FCN5", "training parity, GPT",
                      "FCN5 trajectory"}
    for check, copy, error, bound in trajectory_and_parity:
        assert error >= 10 * bound, f"{check}: {copy}: {error:.3g} is within 10× of the bound {bound}"


def test_the_bf16_training_bounds_stay_clear_of_the_gross_mistakes(trajectory_and_parity):
    """bf16's bounds are wide (its rounding moves three steps by a few per cent), yet reversed
    biases and a wrong optimiser still land at least BF16_MIN_MARGIN times beyond them; the subtle
    mistakes are held to the fp32 bound by the bf16 variant's own fp32 steps."""
    found = broken_copies.bf16_copies(trajectory_and_parity)
    assert sorted(copy for check, copy, _, _ in found if check.startswith("training parity")) == sorted(
        ["every bias vector reversed"] * 3 + ["no momentum", "learning rate 10× too high", "SGD instead of Adam", "no momentum"])
    assert {check for check, _, _, _ in found} == {"training parity (bf16), CNN", "training parity (bf16), RNN",
                                                   "training parity (bf16), FCN5", "FCN5 trajectory (bf16)"}
    # The whole run too is held to the gross mistakes only: a learning rate 10 % off moves a long run
    # no more than bf16's rounding moves the plateau's end.
    assert [copy for check, copy, _, _ in found if check == "FCN5 trajectory (bf16)"] == ["no momentum"]
    for check, copy, error, bound in found:
        assert bound == verdict.bounds()[check]
        assert error >= margins.MIN_MARGIN[check] * bound, f"{check}: {copy}: {error:.3g} is within the margin of {bound}"
    # Wider than the fp32 bound it sits beside.
    for task in ("CNN", "RNN", "FCN5"):
        assert reference.BF16_TRAIN_PARITY_TOLERANCE[task] > 100 * reference.TRAIN_PARITY_TOLERANCE[task]


def test_the_bf16_master_copy_is_the_reference_run_with_one_mistake():
    """Kept in float32 the copy's run is the float32 reference's; kept in bfloat16 it loses updates."""
    import numpy as np

    params, dataset, _, expected = broken_copies._trajectory_run("smoke")
    assert broken_copies.bf16_master_trajectory(params, dataset, stored=lambda values: values) == expected
    ((check, copy, error, bound),) = broken_copies.bf16_trajectory_copies("smoke")
    assert check == "FCN5 trajectory (bf16)" and copy == broken_copies.BF16_MASTER_COPY
    assert bound == verdict.bounds()[check] and error > 100 * reference.TRAIN_TRAJECTORY_TOLERANCE
    assert np.isfinite(error)


def test_the_feature_checks_catch_a_wrong_model_and_a_wrong_cast():
    found = broken_copies.feature_copies(size=32)
    assert {check for check, _, _, _ in found} == {"feature parity", "bf16 features"}
    for check, copy, error, bound in found:
        assert error >= 10 * bound, f"{check}: {copy}: {error:.3g}"


def test_each_broken_engine_names_an_existing_line_of_its_notebook(tmp_path):
    """Every replacement applies exactly once to today's notebook (a notebook edit that moves a
    line breaks this test, not the benchmark later)."""
    for framework, name, changes in broken_copies.BROKEN_ENGINES:
        path = broken_copies.broken_notebook(framework, name, tmp_path / framework)
        text = "".join("".join(cell["source"]) for cell in json.loads(path.read_text())["cells"])
        original = (broken_copies.ROOT / "notebooks" / path.name).read_text()
        assert all(new in text for _, new in changes) and path.read_text() != original, name
    assert {framework for framework, _, _ in broken_copies.BROKEN_ENGINES} >= {"pytorch", "paddle", "gluon", "tensorflow"}
    # Every MultiGPU notebook has a copy with the engine taken out of its timed loop only.
    from runner.frameworks import RUNNABLE

    timed = {framework for framework, name, _ in broken_copies.BROKEN_ENGINES if name.startswith(broken_copies.TIMED_LOOP)}
    assert timed == {framework.name for framework in RUNNABLE.values() if "MultiGPU" in framework.tasks}


@pytest.mark.parametrize("name", [name for framework, name, _ in broken_copies.BROKEN_ENGINES if framework == "pytorch"])
def test_a_broken_pytorch_engine_makes_its_record_invalid_by_its_check(tmp_path, name):
    """Two gloo processes at smoke size: without DistributedDataParallel in the equivalence steps
    each replica trains on its own share, and with the loss scaled by the world size the all-reduce
    sums (the equivalence check catches both); without it in the timed loop only, the equivalence
    steps still pass and the replica check of the timed run catches it. The record says which check
    failed, far beyond its bound."""
    record = broken_copies.run_broken_copy("pytorch", name, tmp_path)
    assert record is not None and record["status"] == "ok", record and record.get("reason")
    checks = record["checks"]
    check, prefix = broken_copies.caught_by(name)
    assert checks[f"{prefix}_relative_error"] >= NEEDED[check] * checks[f"{prefix}_tolerance"]
    valid, why = report.validity(record)
    assert not valid and why.startswith(f"invalid: {prefix} error")
    if name.startswith(broken_copies.TIMED_LOOP):
        assert checks["data_parallel_update_relative_error"] <= checks["data_parallel_update_tolerance"] / 100
        assert checks["data_parallel_replicas"] == record["metrics"]["devices"] == 2


def test_each_broken_optimiser_names_an_existing_line_of_its_gpt_notebook(tmp_path):
    for framework, task, name, changes in broken_copies.OPTIMISER_COPIES:
        path = broken_copies.broken_notebook(framework, name, tmp_path / framework / name.replace(" ", "-"))
        text = "".join("".join(cell["source"]) for cell in json.loads(path.read_text())["cells"])
        assert task in path.name and path.read_text() != (broken_copies.ROOT / "notebooks" / path.name).read_text(), name
        assert all(new in text for _, new in changes), name
    # At least two frameworks, each with the four mistakes of issue 42 (clipping off, clipping at twice
    # the norm, beta_2, decay on biases and LayerNorm).
    by_framework = {}
    for framework, _, name, _ in broken_copies.OPTIMISER_COPIES:
        by_framework.setdefault(framework, []).append(name)
    assert len(by_framework) >= 2 and all(len(names) == 4 for names in by_framework.values())


@pytest.mark.parametrize("framework, name", [(framework, name) for framework, _, name, _ in broken_copies.OPTIMISER_COPIES])
def test_a_gpt_notebook_with_a_broken_optimiser_is_invalid_by_its_training_parity(tmp_path, framework, name):
    """The optimiser is changed where the timed train step gets it; the parity steps, through the same
    train_step and create_optimizer, cross the clipping threshold on some steps and not on others,
    so each copy's record is invalid by its training parity, at least ten times its bound."""
    record = broken_copies.run_broken_copy(framework, name, tmp_path, threads=1)
    assert record is not None and record["status"] == "ok", record and record.get("reason")
    checks = record["checks"]
    assert checks["train_parity_max_abs_error"] >= 10 * checks["train_parity_tolerance"], checks["train_parity_max_abs_error"]
    assert report.validity(record)[1].startswith("invalid: train_parity error")


def test_the_margins_table_shows_both_sides_of_every_bound_and_flags_a_close_one():
    def checked(task, checks, **fields):
        return dict({"task": task, "status": "ok", "framework": "pytorch", "variant": "default",
                     "hardware": {"cpu_model": "Test CPU", "cpu_cores": 2}, "checks": checks}, **fields)

    written = [checked("CNN", {"train_parity_max_abs_error": 1e-5, "train_parity_tolerance": 1e-3}),
               checked("CNN", {"train_parity_max_abs_error": 2e-5, "train_parity_tolerance": 1e-3}, framework="gluon"),
               checked("Inference", {"feature_max_abs_error": 0.2, "feature_tolerance": 0.5}, variant="bf16"),
               checked("Inference", {"feature_max_abs_error": 4e-4, "feature_tolerance": 1e-3,
                                     "bf16_feature_relative_error": 0.08, "bf16_feature_tolerance": 0.2}, variant="bf16"),
               checked("MultiGPU", {"data_parallel_update_relative_error": 2e-6, "data_parallel_update_tolerance": 1e-3}),
               checked("CNN", {"train_parity_max_abs_error": 0.5, "train_parity_tolerance": 1e-3}, status="failed")]
    broken = [{"check": "training parity, CNN", "copy": "no momentum", "error": 1.4, "bound": 1e-3},
              {"check": "training parity, CNN", "copy": "dense1 bias swapped", "error": 0.04, "bound": 1e-3},
              {"check": "MultiGPU equivalence", "copy": "pytorch: no all-reduce", "error": 0.4, "bound": 1e-3,
               "hardware": "Test CPU (2 cores)"}]
    table = margins.markdown(written, broken)
    rows = {line.split(" | ")[0].strip("| "): line for line in table.splitlines() if line.startswith("| ")}
    assert "| 1e-03 | 2.0e-05 (gluon, Test CPU (2 cores)) | 50× | 0.04 (dense1 bias swapped) | 40× |" in rows["training parity, CNN"]
    # A bf16 record from before its model was judged in fp32 is left out of the feature parity.
    assert "| 1e-03 | 4.0e-04 (pytorch (bf16), Test CPU (2 cores)) | **2.5×: too close** | — | — |" in rows["feature parity"]
    assert "| 2e-01 | 8.0e-02 (pytorch (bf16), Test CPU (2 cores)) | **2.5×: too close** |" in rows["bf16 features"]
    assert "| 500× | 0.4 (pytorch: no all-reduce (Test CPU (2 cores))) | 400× |" in rows["MultiGPU equivalence"]
    # Today's bound, whatever the records held: a check without runs or copies says so.
    assert rows["training parity, RNN"] == "| training parity, RNN | 1e-04 | — | — | — | — |"


def test_a_whole_run_is_held_beside_copies_of_its_own_length_from_the_newest_sitting():
    quick_run = {"task": "FCN5", "status": "ok", "framework": "pytorch", "variant": "default", "profile": "quick",
                 "hardware": {"cpu_model": "Test CPU", "cpu_cores": 2},
                 "checks": {"train_trajectory_max_abs_error": 1e-6, "train_trajectory_tolerance": 1e-4}}
    sitting = {"check": "FCN5 trajectory", "bound": 1e-4, "kind": "numpy", "started_at": "2026-12-04T10:00:00+00:00"}
    broken = [dict(sitting, copy="learning rate 10 % off", error=0.36),  # the smoke run's length
              dict(sitting, copy="learning rate 10 % off, the quick run", error=0.048),
              # an older sitting's copy, dropped from the set since
              dict(sitting, copy="a copy no longer computed, the quick run", error=0.002, started_at="2026-12-01T10:00:00+00:00")]
    assert margins.copy_profile(broken[0]) == "smoke" and margins.copy_profile(broken[1]) == "quick"
    (row,) = [row for row in margins.rows([quick_run], broken) if row[0] == "FCN5 trajectory"]
    assert row[3] == (0.048, "learning rate 10 % off, the quick run")
    # Without a correct run to pair them with, every copy of the newest sitting is shown.
    (row,) = [row for row in margins.rows([], broken) if row[0] == "FCN5 trajectory"]
    assert row[2] is None and row[3] == (0.048, "learning rate 10 % off, the quick run")
