"""The suite's own cost, as run_all.py --self-test prints it at the end and writes it to
docs/test-costs.md: wall and CPU time, the slowest tests, the time per module and per framework."""
from runner import self_test


def test_the_cost_summary_names_the_slowest_tests_and_sums_modules_and_frameworks():
    durations = {f"tests/test_notebooks.py::test_runs[jax_flax-CNN-default]": 300.0,
                 f"tests/test_notebooks.py::test_runs[pytorch-CNN-default]": 100.0,
                 "tests/test_notebooks.py::test_gpt[pytorch-default]": 20.0,
                 "tests/test_nodes.py::test_two_nodes[tensorflow]": 200.0,
                 "tests/test_report.py::test_tables": 1.0,
                 **{f"tests/test_params.py::test_{number}": 0.01 * number for number in range(30)}}
    text = self_test.summary(durations, wall=125.0, cpu=200.0, cache="warm cache")
    assert text.startswith("Test suite: 2 min 05 s wall, 200 CPU-seconds (160 % of one core;")
    assert "35 tests, warm cache, on " in text
    slowest = [line for line in text.splitlines()[text.splitlines().index("| ---: | --- |") + 1:]][:self_test.SLOWEST]
    assert len(slowest) == self_test.SLOWEST and slowest[0] == "| 300 | `tests/test_notebooks.py::test_runs[jax_flax-CNN-default]` |"
    assert "| 420 | test_notebooks.py |" in text and "| 200 | test_nodes.py |" in text
    assert "| 300 | jax_flax (framework) |" in text and "| 120 | pytorch (framework) |" in text
    assert "| 200 | tensorflow (framework) |" in text
    assert self_test.group_of("tests/test_report.py::test_tables[a-b]") == ("test_report.py", None)
    page = self_test.page(text)
    assert page.startswith("# What the tests cost") and text in page
