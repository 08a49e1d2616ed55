"""The peak a column is held against: the theoretical figure from what the CPU says, the GEMMs
measured, and the larger of them named with its source."""
import sys

import pytest

from common import peak

INTEL = {"avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16"}


def test_the_theoretical_peak_follows_vector_width_fma_units_and_clock():
    intel = peak.theoretical(cores=2, flags=INTEL, vendor="GenuineIntel", family=6, ghz=2.6)
    assert intel["fp32"] == pytest.approx(2 * 2.6 * 16 * 2 * 2)  # 512-bit, two FMA units
    assert intel["bf16"] == pytest.approx(2 * 2.6 * 512 * 2)  # AMX tiles
    assert "512-bit" in intel["fp32_how"] and "AMX" in intel["bf16_how"]
    # Zen 4 splits each AVX-512 instruction over its two 256-bit pipes; AVX-512 BF16 doubles fp32.
    zen4 = peak.theoretical(cores=2, flags={"avx2", "avx512f", "avx512_bf16"}, vendor="AuthenticAMD", family=25, ghz=2.6)
    assert zen4["fp32"] == pytest.approx(2 * 2.6 * 8 * 2 * 2) and zen4["bf16"] == pytest.approx(2 * zen4["fp32"])
    avx2 = peak.theoretical(cores=1, flags={"avx2"}, vendor="AuthenticAMD", family=23, ghz=3.0)
    assert avx2["fp32"] == pytest.approx(3.0 * 8 * 2 * 2) and avx2["bf16"] is None
    assert peak.theoretical(cores=2, flags=set(), vendor="x", family=0, ghz=2.0)["fp32"] is None


def test_the_peak_is_the_largest_of_every_gemm_measured_and_the_theory_and_says_which():
    measured = {"numpy": {"fp32": {1024: 330.0, 2048: 341.0}}, "torch": {"fp32": {2048: 382.0}, "bf16": {2048: 2520.0}}}
    theory = {"fp32": 332.8, "bf16": 5324.8, "fp32_how": "2 cores × …", "bf16_how": "AMX …"}
    found = peak.combine(measured, theory)
    assert found["fp32"] == {"gflops": 382.0, "source": "torch GEMM 2048²"}
    assert found["bf16"] == {"gflops": 5324.8, "source": "theoretical: AMX …"}
    assert found["measured"] == measured
    above = peak.combine(measured, dict(theory, fp32=400.0))
    assert above["fp32"]["source"] == "theoretical: 2 cores × …"
    # No native bf16: a bf16 run is emulated, and held to no bf16 peak.
    assert peak.combine(measured, dict(theory, bf16=None))["bf16"] is None


def test_numpy_gemms_are_timed_per_size():
    found = peak.numpy_gemms(sizes=(64, 128))
    assert set(found["fp32"]) == {64, 128} and all(gflops > 0 for gflops in found["fp32"].values())


def test_the_runner_measures_numpy_and_each_framework_environment_in_a_fresh_pinned_interpreter():
    """The runner's own interpreter stands in for a framework environment: it has numpy and none of
    the frameworks, so it adds no GEMM of its own; the theoretical peak is of the pinned cores."""
    from runner import peaks

    found = peaks.machine_peak(1, [sys.executable], sizes=(128,))
    assert set(found["measured"]) == {"numpy"} and found["measured"]["numpy"]["fp32"][128] > 0
    if found["theoretical"]["fp32"]:
        one_core = peak.theoretical(cores=1)
        assert found["theoretical"]["fp32"] == one_core["fp32"]
    assert found["fp32"]["gflops"] >= found["measured"]["numpy"]["fp32"][128]
