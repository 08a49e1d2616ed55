"""Tables by machine: a page per machine, one table per machine kind in the README (each from one
machine), a reference machine per task for the reader, and records made before today's protocol out
of every table."""
from pathlib import Path

from common import paths
from runner import machines, regenerate, report, verdict
from test_report import CHECKS, CPU, GPU, record

OTHER_CPU = dict(CPU, cpu_model="Other CPU", cpu_family=6, cpu_model_number=1)


def old_protocol(made):
    """`made` as a record of before today's protocol (common.records.PROTOCOL) would read."""
    made.pop("protocol")
    return made


def test_a_record_without_a_check_of_today_is_before_the_protocol_and_leaves_the_tables():
    old = old_protocol(record(task="Inference", variant="bf16",
                              checks=dict(CHECKS["Inference"], feature_max_abs_error=0.2, feature_tolerance=0.5)))
    failed = old_protocol(record(status="failed", reason="Traceback\nValueError: x", checks={}))
    assert verdict.before_protocol(old) and verdict.missing_checks(old) == ["bf16_feature_relative_error"]
    assert not verdict.before_protocol(failed) and not verdict.before_protocol(record())
    assert machines.current([old, failed, record()]) == [failed, record()]
    # Made today without a check it requires: shown, as invalid.
    today = record(task="Inference", variant="bf16", checks=dict(CHECKS["Inference"]))
    assert not verdict.before_protocol(today) and verdict.validity(today) == (False, "invalid: no bf16_feature_relative_error check")


def test_the_reference_machine_of_a_task_has_the_most_valid_cells_and_a_tie_goes_to_the_newer():
    older = [record(framework=name, started_at="2026-11-01T00:00:00+00:00") for name in ("pytorch", "tensorflow")]
    newer = [record(framework="pytorch", hardware=OTHER_CPU, started_at="2026-12-01T00:00:00+00:00"),
             record(framework="gluon", hardware=OTHER_CPU, started_at="2026-12-01T00:00:00+00:00",
                    checks=dict(CHECKS["CNN"], train_parity_max_abs_error=0.5))]
    assert machines.reference_machines(older + newer) == {"CNN": machines.machine_of(older[0])}
    tied = newer + [record(framework="tensorflow", hardware=OTHER_CPU, started_at="2026-12-01T00:00:00+00:00")]
    assert machines.reference_machines(older + tied) == {"CNN": machines.machine_of(tied[0])}
    assert machines.reference_machines(older, gpu=True) == {}


def test_the_readme_shows_one_table_per_machine_kind_each_from_one_machine():
    """The CPU machine with the most valid cells over every task (not per task), the GPU one apart,
    inline links, no column without a valid cell, and a framework without one named, not a row of dashes."""
    cpu = [record(framework="pytorch"), record(framework="tensorflow", task="RNN")]
    other = [record(framework="gluon", hardware=OTHER_CPU, task="Inference")]  # fewer valid cells
    gpu = [record(framework="pytorch", hardware=GPU),
           record(framework="gluon", hardware=GPU, checks=dict(CHECKS["CNN"], train_parity_max_abs_error=0.5))]
    assert machines.front_machine(cpu + other + gpu) == machines.machine_of(cpu[0])
    assert machines.front_machine(cpu + other + gpu, gpu=True) == machines.machine_of(gpu[0])
    text = machines.matrix_markdown(cpu + other + gpu)
    cpu_part, gpu_part = text.split("**GPU: ")
    assert cpu_part.startswith(f"**CPU: [{machines.machine_of(cpu[0])}](docs/machines/")
    header = next(line for line in cpu_part.splitlines() if line.startswith("| framework"))
    assert "[CNN]" in header and "[RNN]" in header and "Inference" not in header  # Other CPU's cell stays out
    pytorch = next(row for row in cpu_part.splitlines() if row.startswith("| PyTorch |"))
    assert "[**300**](results/notebooks/x/pytorch_CNN.ipynb)" in pytorch and "][" not in text
    tensorflow = next(row for row in cpu_part.splitlines() if row.startswith("| TensorFlow |"))
    assert tensorflow.split(" | ")[1] == "—" and "[**700**]" in tensorflow
    assert "| MXNet (Gluon) |" not in cpu_part and "| MXNet (Gluon) |" not in gpu_part
    assert gpu_part.startswith("[NVIDIA H200]") and "No valid run on this machine: " in gpu_part
    assert "MXNet (Gluon)" in gpu_part.split("No valid run on this machine: ")[1]
    assert machines.matrix_markdown([]).startswith("_No valid")


def test_each_machine_has_a_page_and_the_index_counts_its_runs(tmp_path):
    from common import records

    results = tmp_path / "results"
    for made in [record(framework="pytorch"), record(framework="pytorch", hardware=OTHER_CPU),
                 record(framework="gluon", hardware=OTHER_CPU, profile="smoke"),
                 old_protocol(record(task="Inference", variant="bf16", checks=dict(CHECKS["Inference"], feature_tolerance=0.5)))]:
        records.append_record(made, results / "records.jsonl")
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{report.BEGIN_MARKER}\n{report.END_MARKER}\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "machines").mkdir()
    (tmp_path / "docs" / "machines" / "gone.md").write_text("an old machine's page")
    regenerate.regenerate(results, readme, Path(__file__).resolve().parent.parent / "notebooks")
    pages = sorted(path.name for path in (tmp_path / "docs" / "machines").glob("*.md"))
    assert pages == sorted(["index.md", paths.slug(machines.machine_of(record())) + ".md",
                            paths.slug(machines.machine_of(record(hardware=OTHER_CPU))) + ".md"])
    index = (tmp_path / "docs" / "machines" / "index.md").read_text()
    assert "1 record(s) made before today's protocol" in index and "| 1 | 1 |" in index
    page = (tmp_path / "docs" / "machines" / (paths.slug(machines.machine_of(record())) + ".md")).read_text()
    assert page.startswith("# Results on Test CPU") and "**300** img/s" in page and "Other CPU" not in page
    assert "[**300**](" in readme.read_text() and "results/notebooks/x/pytorch_CNN.ipynb)" in readme.read_text()
    assert regenerate.stale_files(results, readme, Path(__file__).resolve().parent.parent / "notebooks") == []


def test_a_machine_without_native_bf16_has_a_page_that_says_so():
    """common.peak measures no bf16 peak where bf16 is emulated (hardware.peak["bf16"] is None)."""
    made = record(hardware=dict(CPU, peak={"fp32": {"gflops": 120.0, "source": "numpy GEMM 2048²"}, "bf16": None}))
    page = machines.machine_page(machines.machine_of(made), [made], {}, str)
    assert "fp32 peak: 120 GFLOP/s (numpy GEMM 2048²)" in page and "bf16: not native" in page


def test_executed_notebooks_no_record_of_today_names_are_removed_with_their_files(tmp_path):
    """A notebook whose only record is before today's protocol, and the features kept beside it, go;
    the shown run's notebook, and a smoke run's, stay; the check of committed pages sees the rest."""
    from common import records

    results = tmp_path / "results"
    folder = results / "notebooks" / "x"
    shown = record(framework="pytorch", task="Inference", checks=dict(CHECKS["Inference"]))
    shown["notebook"] = str(folder / "quick" / "PyTorch_Inference.ipynb")
    old = old_protocol(record(framework="pytorch", task="Inference", variant="bf16",
                              checks=dict(CHECKS["Inference"], feature_tolerance=0.5)))
    old["notebook"] = str(folder / "quick" / "PyTorch_Inference.bf16.ipynb")
    for made in (shown, old):
        records.append_record(made, results / "records.jsonl")
    names = ["PyTorch_Inference.ipynb", "PyTorch_Inference.features.npy", "PyTorch_Inference.bf16.ipynb",
             "PyTorch_Inference.bf16.features.npy"]
    for name in names:
        (folder / "quick").mkdir(parents=True, exist_ok=True)
        (folder / "quick" / name).write_text("{}")
    (folder / "smoke").mkdir()
    (folder / "smoke" / "PyTorch_CNN.ipynb").write_text("{}")
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{report.BEGIN_MARKER}\n{report.END_MARKER}\n")
    notebooks = Path(__file__).resolve().parent.parent / "notebooks"
    gone = [folder / "quick" / name for name in names[2:]]
    assert set(regenerate.stale_files(results, readme, notebooks)) >= set(gone)
    assert not {folder / "quick" / name for name in names[:2]} & set(regenerate.stale_files(results, readme, notebooks))
    regenerate.regenerate(results, readme, notebooks)
    assert sorted(path.name for path in (folder / "quick").iterdir()) == sorted(names[:2])
    assert (folder / "smoke" / "PyTorch_CNN.ipynb").exists()
    assert regenerate.stale_files(results, readme, notebooks) == []


def test_a_machine_page_without_a_valid_figure_says_so_and_lists_each_reason_once():
    why = "bf16 not native on this CPU (no AVX512_BF16, AMX or Arm BF16); --emulate-bf16 runs it for its checks"
    skipped = [record(variant="bf16", status="skipped", reason=why, data=None, checks={}) for _ in range(3)]
    for made in skipped:
        made.pop("notebook")
    page = machines.machine_page(machines.machine_of(skipped[0]), skipped, {}, str)
    assert "No valid figure on this machine" in page
    lines = [line for line in page.splitlines() if line.startswith("- ")]
    assert lines == [f"- CNN · PyTorch (bf16) · quick profile, no data loaded: skipped: {why} (3 runs)"]
