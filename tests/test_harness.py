"""Every notebook shows its framework, not our harness (issue 14): at most HARNESS_LINES lines of
records, timing, probes, the shared start and batch order, and checks, by harness_lines' count."""
from pathlib import Path

import nbformat
import pytest

from harness_lines import harness_lines

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
HARNESS_LINES = 26  # the precision probe's line (precision_probes) included
PARAMETER_LINES = 8  # the six shared parameters, and MultiGPU's devices and pipeline


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_notebook_shows_at_most_26_harness_lines(path):
    counted = harness_lines(path)
    assert len(counted["harness"]) <= HARNESS_LINES, "\n".join(text for _, text in counted["harness"])
    assert len(counted["parameters"]) <= PARAMETER_LINES, counted["parameters"]


def notebook(tmp_path, *sources, language="python"):
    cells = [nbformat.v4.new_code_cell('profile = "quick"\nthreads = 0')]
    cells[0].metadata["tags"] = ["parameters"]
    cells += [nbformat.v4.new_code_cell(source) for source in sources]
    book = nbformat.v4.new_notebook(cells=cells)
    book.metadata["kernelspec"] = {"name": language, "display_name": language, "language": language}
    path = tmp_path / "book.ipynb"
    nbformat.write(book, str(path))
    return harness_lines(path)


def test_the_count_takes_whole_statements_headers_and_parity_functions(tmp_path):
    counted = notebook(tmp_path, '''
from common import harness
from common import data as datasets, reference
run = harness.start("pytorch", "CNN", profile)
import torch
dataset = datasets.load_cnn_images(10, 10)
layers = dict(zip(reference.CNN_LAYERS, range(4)))  # a constant of the model
weights = reference.initial_weights("CNN")


def train_one_epoch(model, x, timer):
    """Docstrings do not count."""
    for batch in x:
        model(batch)  # framework code
        timer.step(len(batch))


def parity_losses(model):
    return [1.0,
            2.0]


checks = run.finish(dataset,
                    {"a": 1})
%time model = torch.nn.Linear(2, 2)
''')
    assert [text.strip() for _, text in counted["harness"]] == [
        "from common import harness", "from common import data as datasets, reference",
        'run = harness.start("pytorch", "CNN", profile)', 'weights = reference.initial_weights("CNN")',
        "def train_one_epoch(model, x, timer):", "timer.step(len(batch))",
        "def parity_losses(model):", "return [1.0,", "2.0]", "checks = run.finish(dataset,", '{"a": 1})']
    assert counted["parameters"] == ['profile = "quick"', "threads = 0"]


def test_the_count_reads_r_statements_to_their_closing_bracket(tmp_path):
    counted = notebook(tmp_path, '''
harness <- import("common.harness")
reference <- import("common.reference")
model <- keras_model_sequential()  # framework code
names <- reference$CNN_LAYERS
run$finish(dataset,
           metrics)
''', language="R")
    assert [text.strip() for _, text in counted["harness"]] == [
        'harness <- import("common.harness")', 'reference <- import("common.reference")',
        "run$finish(dataset,", "metrics)"]
