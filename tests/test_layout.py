"""Project rules that keep the notebooks side by side and `common` framework-free."""
import json
import re
from pathlib import Path

import pytest

from runner.frameworks import RUNNABLE, notebook_name

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SKELETON = ["## Setup", "## Data", "## Model", None, "## Evaluate", "## Record"]
DEEP_LEARNING = re.compile(r"^\s*(import|from)\s+(torch|tensorflow|jax|flax|keras|mxnet|chainer|"
                           r"theano|lasagne|paddle|onnxruntime|cupy|optax)\b", re.M)


def cells(path):
    return json.loads(path.read_text())["cells"]


def test_every_registered_notebook_exists_and_every_notebook_is_registered():
    registered = {notebook_name(f, task) for f in RUNNABLE.values() for task in f.tasks}
    assert registered == {path.name for path in NOTEBOOKS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path):
    for cell in cells(path):
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_follows_the_skeleton(path):
    notebook = cells(path)
    assert notebook[0]["cell_type"] == "markdown" and "".join(notebook[0]["source"]).startswith("# ")
    parameters = [c for c in notebook if "parameters" in c["metadata"].get("tags", [])]
    assert len(parameters) == 1 and notebook.index(parameters[0]) == 1
    names = set(re.findall(r"^(\w+)\s*(?:=|<-)", "".join(parameters[0]["source"]), re.M))
    assert {"profile", "variant", "data", "device", "threads", "record_path"} <= names
    headings = [line for c in notebook if c["cell_type"] == "markdown"
                for line in "".join(c["source"]).splitlines() if line.startswith("## ")]
    if "_MultiGPU" in path.name:  # then how the same code runs on several machines
        assert headings[-1] == "## Beyond one machine"
        headings = headings[:-1]
    assert len(headings) == len(SKELETON)
    for heading, expected in zip(headings, SKELETON):
        if expected is not None:  # the timed section is "## Train (timed)" or "## Predict (timed)"
            assert heading == expected
    code = "".join("".join(c["source"]) for c in notebook if c["cell_type"] == "code")
    # R notebooks reach the same Python `common` through reticulate: `harness$start` for `harness.start`.
    member = "$" if language(path) == "R" else "."
    for identifier in ("create_model", "predict", f"harness{member}start", f"run{member}finish"):
        assert identifier in code
    # The harness starts before the framework is imported: harness.start pins its threads.
    first_import = DEEP_LEARNING.search(code) or re.search(r"(import\(\"(keras|tensorflow)\"\)|library\(keras)", code)
    assert first_import and code.index(f"harness{member}start") < first_import.start()
    # The run describes the hardware, versions and GPU choice and makes the timer: one place for all.
    assert not re.search(r"probe[.$](hardware|versions|use_gpu)\(|\bTimer\(", code)
    if "_Inference" not in path.name:
        vocabulary_of_training(code, member)
    if language(path) == "R":
        assert 'import("common.' in code
    else:
        assert "from common import" in code and "import *" not in code


def vocabulary_of_training(code, member):
    """One vocabulary in every CNN and RNN notebook (issue 14): the same function names, the shared
    start, the shared batch order, training parity through the same train step."""
    for name in ("create_model", "create_optimizer", "load_shared_weights", "train_one_epoch", "predict"):
        assert re.search(rf"(def {name}\(|{name} <- function\()", code), name
    if "densenet.initial_weights" in code:  # MultiGPU: its own start, and 1 device against N
        calls = ("densenet.initial_weights", "densenet.data_parallel_check", "batches.epoch_batches")
    else:
        # GPT draws windows at seeded offsets (nanoGPT's batches) where the others walk epochs.
        order = f"batches{member}window_offsets" if f"batches{member}window_offsets" in code else f"batches{member}epoch_batches"
        # Parity through train_parity, or parity_checks where a bf16 variant runs the steps twice.
        parity = f"reference{member}parity_checks" if f"reference{member}parity_checks" in code else f"reference{member}train_parity"
        calls = (f"reference{member}initial_weights", f"reference{member}parity_weights", parity, order)
    for call in calls:
        assert call in code, call
    assert not re.search(r"\b(generator|rng)\b.*\)\s*:", code), "the batch order comes from common.batches"
    signature = re.search(r"def train_one_epoch\(([^)]*)\)", code)
    if signature:  # every argument used in the body
        body = code[signature.end():].split("\ndef ", 1)[0].split("\n\n\n", 1)[0]
        for argument in (a.split("=")[0].strip() for a in signature.group(1).split(",") if a.strip()):
            assert re.search(rf"\b{argument}\b", body), f"train_one_epoch ignores {argument}"


def language(path):
    metadata = json.loads(path.read_text())["metadata"]
    return metadata.get("kernelspec", {}).get("language") or metadata.get("language_info", {}).get("name")


def test_common_never_imports_a_deep_learning_framework():
    for module in (ROOT / "common").rglob("*.py"):
        assert not DEEP_LEARNING.search(module.read_text()), module.name


@pytest.mark.parametrize("task", ["CNN", "Inference", "RNN", "FCN5", "GPT"])
def test_the_keras_notebooks_of_a_task_differ_only_in_their_backend(task):
    """Keras 3's three notebooks of a task are kept by hand, in step: only the title and its
    paragraph, the variants named in the parameters and the imports cell (where the backend is
    chosen and asked for its device and threads) may differ; data, model, training, evaluation
    and record are one code."""
    notebooks = {backend: cells(ROOT / "notebooks" / f"Keras_{backend}_{task}.ipynb")
                 for backend in ("TF", "JAX", "Torch")}
    assert len({len(notebook) for notebook in notebooks.values()}) == 1
    differing = {index for index, versions in enumerate(zip(*notebooks.values()))
                 if len({"".join(cell["source"]) for cell in versions}) > 1}
    assert differing <= {0, 1, 3}, differing
    for backend, notebook in notebooks.items():
        imports = "".join(notebook[3]["source"])
        assert f'os.environ["KERAS_BACKEND"] = "{ {"TF": "tensorflow", "JAX": "jax", "Torch": "torch"}[backend]}"' in imports


def test_no_module_of_common_imports_one_that_imports_it_back():
    common = ROOT / "common"
    # Dotted names below common: "data", "loaders.mnist", "loaders" (its __init__).
    modules = {".".join(path.relative_to(common).with_suffix("").parts).removesuffix(".__init__"): path.read_text()
               for path in common.rglob("*.py") if path.name != "__init__.py" or path.parent != common}
    graph = {}
    for name, text in modules.items():
        graph[name] = set()
        for package, imported in re.findall(r"^\s*from common((?:\.\w+)*) import ([\w, ]+)", text, re.M):
            package = package.lstrip(".")
            for item in (part.split(" as ")[0].strip() for part in imported.split(",")):
                target = f"{package}.{item}" if package and f"{package}.{item}" in modules else (package or item)
                if target in modules and target != name:
                    graph[name].add(target)

    def reaches(start, goal, seen=()):
        return any(step == goal or (step not in seen and reaches(step, goal, seen + (step,)))
                   for step in graph[start])

    circles = sorted(name for name in graph if reaches(name, name))
    assert circles == [], f"import circles through {circles}"


def test_run_all_is_a_dispatcher_of_at_most_80_lines():
    """Everything but reading the options and handing over lives in runner/ (issue 43)."""
    lines = (ROOT / "run_all.py").read_text().splitlines()
    assert len(lines) <= 80, len(lines)
    assert not [line for line in lines if line.startswith(("def ", "class ")) and not line.startswith("def main(")]


def test_the_path_helpers_exist_once_in_common_paths():
    """slug, the path relative to the repository and a folder's size are common.paths' alone (issue
    43): two slugs once disagreed on runs of dashes."""
    from common import paths

    assert paths.slug("Intel(R) Xeon(R) Processor (family 6, AMX) -- 2 cores") == "intel-r-xeon-r-processor-family-6-amx-2-cores"
    defined = [f"{path.relative_to(ROOT)}: {line.split('(')[0]}" for path in sorted((ROOT / "runner").rglob("*.py"))
               for line in path.read_text().splitlines() if line.startswith(("def slug(", "def relative(", "def folder_bytes("))]
    assert not defined, defined
