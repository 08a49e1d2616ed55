"""fp32 measured, not assumed (common.precision, precision_probes/): the probe's float64 references,
its bound between IEEE fp32 and TF32 with room on both sides, the verdict on a run whose products
ran in reduced precision, and such a notebook copy caught where the CPU can compute bf16."""
import json

import numpy as np
import pytest

from common import precision, probe
from runner import broken_copies, margins, verdict
from test_report import CHECKS, GPU, record


def test_the_convolution_reference_is_the_cross_correlation_in_either_layout():
    x, w = precision.convolution_inputs()
    expected = precision.convolution_reference(x, w)
    batch, channels, height, width, filters, size = precision.CONVOLUTION_SHAPE
    assert expected.shape == (batch, filters, height - size + 1, width - size + 1)
    # One output written out as the sum it is.
    assert np.isclose(expected[1, 3, 4, 5], sum(float(x[1, c, 4 + i, 5 + j]) * float(w[3, c, i, j])
                                                for c in range(channels) for i in range(size) for j in range(size)))
    x_nhwc, w_hwio = precision.convolution_inputs("NHWC")
    assert np.allclose(precision.convolution_reference(x_nhwc, w_hwio, "NHWC").transpose(0, 3, 1, 2), expected)
    with pytest.raises(ValueError, match="NCHW, NHWC"):
        precision.convolution_inputs("CHWN")


def test_rounding_keeps_the_significant_bits_of_each_format():
    values = np.float32([1 + 2 ** -10, 1 + 2 ** -7, 1 + 3 * 2 ** -12, 3.14159265])
    assert list(precision.rounded(values, "tf32")) == [1 + 2 ** -10, 1 + 2 ** -7, 1 + 2 ** -10, np.float32(3.140625)]
    assert list(precision.rounded(values, "bf16")) == [1.0, 1 + 2 ** -7, 1.0, 3.140625]


def test_the_bound_lies_ten_times_above_fp32_and_ten_times_below_tf32_and_bf16():
    a, b = precision.matmul_inputs()
    fp32 = precision.relative_error(a @ b, a.astype(np.float64) @ b)
    assert 0 < fp32 <= precision.ERROR_BOUND / 10
    copies = precision.reduced_copies()
    assert {(check, copy) for check, copy, _, _ in copies} == {
        (f"fp32 precision, {what}", f"{fmt} inputs") for what in ("matmul", "convolution") for fmt in ("tf32", "bf16")}
    for check, copy, error, bound in copies:
        assert bound == verdict.bounds()[check] and error >= margins.DEFAULT_MIN_MARGIN * bound, (check, copy, error)
    with pytest.raises(ValueError, match="shape"):
        precision.relative_error(np.zeros(3), np.ones(4))


def test_the_checks_call_what_the_task_computes():
    calls = []

    def product(a, b):
        calls.append("matmul")
        return a @ b

    def convolution(x, w):
        calls.append("convolution")
        return precision.convolution_reference(x, w)

    gpt = precision.checks("GPT", product, convolution)
    assert calls == ["matmul"] and set(gpt) == {"precision_matmul_relative_error", "precision_matmul_tolerance"}
    cnn = precision.checks("CNN", product, convolution, recurrent=lambda: (np.ones(2, np.float32), np.ones(2)))
    assert calls[1:] == ["matmul", "convolution"]
    assert cnn["precision_convolution_relative_error"] < 1e-12 and cnn["precision_recurrent_relative_error"] == 0
    assert cnn["precision_convolution_tolerance"] == cnn["precision_recurrent_tolerance"] == precision.ERROR_BOUND


def test_a_run_whose_products_ran_in_reduced_precision_is_invalid_and_no_correct_run_of_any_check():
    tf32 = dict(CHECKS["RNN"], precision_matmul_relative_error=2.3e-4)
    made = record(task="RNN", checks=tf32)
    assert verdict.validity(made) == (
        False, "invalid: ran in reduced precision: matmul 2.3e-04 from float64, fp32 stays below 1e-05")
    assert verdict.validity(record(task="RNN")) == (True, "")
    # Its parity error, within its bound, is not taken as a correct run's by the margins table.
    largest = dict((check, correct) for check, _, correct, _ in margins.rows([made], []))
    assert largest["training parity, RNN"] is None and largest["fp32 precision, matmul"] is None
    fine = dict((check, correct) for check, _, correct, _ in margins.rows([record(task="RNN")], []))
    assert fine["training parity, RNN"][0] == 1e-7 and fine["fp32 precision, matmul"][0] == 5e-7


def test_the_probe_is_required_of_todays_runs_and_of_every_gpu_run():
    unprobed = {name: value for name, value in CHECKS["CNN"].items() if not name.startswith("precision_")}
    today = record(task="CNN", checks=unprobed)
    assert verdict.validity(today) == (False, "invalid: no precision_matmul_relative_error check")
    # A CPU record made before the probe existed stays; a GPU one (where TF32 is the default) leaves.
    cpu_before = record(task="CNN", checks=unprobed)
    cpu_before["protocol"] = verdict.PRECISION_PROTOCOL - 1
    gpu_before = record(task="CNN", checks=unprobed, hardware=GPU)
    gpu_before["protocol"] = verdict.PRECISION_PROTOCOL - 1
    assert verdict.validity(cpu_before) == (True, "") and not verdict.before_protocol(cpu_before)
    assert verdict.before_protocol(gpu_before)
    assert verdict.missing_checks(gpu_before) == ["precision_matmul_relative_error", "precision_convolution_relative_error"]


def test_each_reduced_precision_copy_names_an_existing_line_of_its_notebook(tmp_path):
    for framework, task, name, changes in broken_copies.REDUCED_PRECISION_COPIES:
        path = broken_copies.broken_notebook(framework, name, tmp_path / framework)
        text = "".join("".join(cell["source"]) for cell in json.loads(path.read_text())["cells"])
        assert task in path.name and all(new in text for _, new in changes), name


@pytest.mark.skipif(not probe.bf16_native("cpu")[0], reason="this CPU computes no bf16: oneDNN keeps fp32 in fp32")
def test_a_notebook_whose_fp32_products_run_in_bf16_is_invalid_by_its_probe(tmp_path):
    """PyTorch's GPT with oneDNN's implicit bf16 switched on, one line in its set-up: the run
    completes, and its record is invalid by its own precision probe, far beyond the bound."""
    ((framework, _, name, _),) = broken_copies.REDUCED_PRECISION_COPIES
    made = broken_copies.run_broken_copy(framework, name, tmp_path, threads=1)
    assert made is not None and made["status"] == "ok", made and made.get("reason")
    assert made["checks"]["precision_matmul_relative_error"] >= 10 * precision.ERROR_BOUND
    assert verdict.validity(made)[1].startswith("invalid: ran in reduced precision: matmul")
