"""The peak a column is held against: the theoretical figure from what the CPU says, the GEMMs
measured, and the larger of them named with its source."""
import sys

import pytest

from common import peak

INTEL = {"avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16"}


def test_the_theoretical_peak_follows_the_fma_datapath_the_core_executes_and_its_clock():
    intel = peak.theoretical(cores=2, flags=INTEL, vendor="GenuineIntel", family=6, model=143, ghz=2.6)
    assert intel["fp32"] == pytest.approx(2 * 2.6 * 16 * 2 * 2)  # 512-bit, two FMA units
    assert intel["bf16"] == pytest.approx(2 * 2.6 * 512 * 2)  # AMX tiles
    assert "512-bit" in intel["fp32_how"] and "AMX" in intel["bf16_how"] and "Sapphire Rapids" in intel["datapath"]
    # AMX only exists from Sapphire Rapids on, whatever model number a hypervisor shows.
    assert peak.theoretical(cores=2, flags=INTEL, vendor="GenuineIntel", family=6, model=167, ghz=2.6)["fp32"] == intel["fp32"]
    # Zen 4 splits each AVX-512 instruction over its two 256-bit pipes; AVX-512 BF16 doubles fp32.
    zen4 = peak.theoretical(cores=2, flags={"avx2", "avx512f", "avx512_bf16"}, vendor="AuthenticAMD",
                            family=25, model=17, ghz=2.6)
    assert zen4["fp32"] == pytest.approx(2 * 2.6 * 8 * 2 * 2) and zen4["bf16"] == pytest.approx(2 * zen4["fp32"])
    # Zen 1 executes AVX2 on two 128-bit FMA pipes: half of Zen 2's two 256-bit ones at one clock.
    zen1 = peak.theoretical(cores=2, flags={"avx2"}, vendor="AuthenticAMD", family=23, model=1, ghz=2.0)
    assert zen1["fp32"] == pytest.approx(2 * 2.0 * 4 * 2 * 2) == 64.0 and zen1["bf16"] is None
    assert "128-bit" in zen1["fp32_how"] and "Zen / Zen+" in zen1["datapath"] and "17h" in zen1["datapath"]
    zen2 = peak.theoretical(cores=1, flags={"avx2"}, vendor="AuthenticAMD", family=23, model=49, ghz=3.0)
    assert zen2["fp32"] == pytest.approx(3.0 * 8 * 2 * 2) and "Zen 2" in zen2["datapath"]
    zen5 = peak.theoretical(cores=1, flags={"avx2", "avx512f"}, vendor="AuthenticAMD", family=26, model=2, ghz=2.0)
    assert zen5["fp32"] == pytest.approx(2.0 * 16 * 2 * 2)
    # Skylake-SP's FMA units go by SKU: the name tells, or the peak is unknown.
    silver = peak.theoretical(cores=1, flags={"avx2", "avx512f"}, vendor="GenuineIntel", family=6, model=85,
                              ghz=2.0, name="Intel(R) Xeon(R) Silver 4114 CPU @ 2.20GHz")
    assert silver["fp32"] == pytest.approx(2.0 * 16 * 1 * 2)
    for unknown in (dict(vendor="GenuineIntel", family=6, model=85, name="Intel Xeon Processor (Skylake)"),
                    dict(vendor="AuthenticAMD", family=23, model=0xF0), dict(vendor="HygonGenuine", family=24, model=0),
                    dict(vendor="x", family=0, model=0)):
        found = peak.theoretical(cores=2, flags={"avx2", "avx512f"}, ghz=2.0, **dict(dict(name=""), **unknown))
        assert found["fp32"] is None and found["bf16"] is None and found["fp32_how"].startswith("unknown")


def test_a_records_peak_takes_the_datapath_table_afresh_and_keeps_its_measured_gemms():
    """A Zen 1 record measured before the table knew its 128-bit pipes (127.8 GFLOP/s theoretical,
    GEMMs up to 66) is held to its best GEMM: the corrected theory, 64, is below it."""
    stored = peak.combine({"torch": {"fp32": {"1024": 39.0, "4096": 66.0}}},
                          {"fp32": 127.8, "bf16": None, "bf16_how": None,
                           "fp32_how": "2 cores × 2.00 GHz × 2 256-bit FMA units × 8 lanes × 2"})
    assert stored["fp32"]["gflops"] == 127.8
    zen1 = {"cpu_model": "AMD EPYC", "cpu_family": 23, "cpu_model_number": 1, "cpu_flags": ["avx2"], "peak": stored}
    held = peak.of_record(zen1)
    assert held["fp32"] == {"gflops": 66.0, "source": "torch GEMM 4096²"}
    assert held["theoretical"]["fp32"] == 64.0 and held["bf16"] is None
    zen2 = peak.of_record(dict(zen1, cpu_model_number=49))
    assert zen2["fp32"]["gflops"] == 128.0 and zen2["fp32"]["source"].startswith("theoretical: 2 cores × 2.00 GHz × 2 256-bit")
    # Too little kept to say (no family): the record's own peaks.
    assert peak.of_record({"cpu_model": "AMD EPYC", "peak": stored}) == stored


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


def test_runs_sharing_a_folder_measure_each_peak_once(tmp_path, monkeypatch):
    """The test suite's runs (runner.peaks.SHARED_VARIABLE) measure a thread count's peak once; a
    different thread count or interpreter is measured apart, and unset, every call measures."""
    from runner import peaks

    measured = []

    def machine_peak(threads, framework_pythons=(), sizes=None):
        measured.append((threads, tuple(framework_pythons)))
        return {"fp32": {"gflops": 10.0 * threads, "source": "numpy"}, "measured": {"numpy": {"fp32": {128: 1.0}}}}

    monkeypatch.setattr(peaks, "machine_peak", machine_peak)
    monkeypatch.delenv(peaks.SHARED_VARIABLE, raising=False)
    peaks.shared_machine_peak(1, [], (128,))
    peaks.shared_machine_peak(1, [], (128,))
    assert len(measured) == 2
    monkeypatch.setenv(peaks.SHARED_VARIABLE, str(tmp_path / "peaks"))
    first = peaks.shared_machine_peak(1, [], (128,))
    again = peaks.shared_machine_peak(1, [], (128,))
    assert first == again and first["fp32"]["gflops"] == 10.0 and len(measured) == 3
    assert peaks.shared_machine_peak(2, [], (128,))["fp32"]["gflops"] == 20.0
    peaks.shared_machine_peak(1, [sys.executable], (128,))
    assert len(measured) == 5
