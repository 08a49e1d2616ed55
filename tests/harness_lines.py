"""Counts a notebook's harness lines: the code a reader sees that serves the benchmark (records,
timing, the shared start and batch order, parity checks, probes) rather than the framework's model
and training. A statement is harness when it names one of the harness names below; all its lines
count (a call wrapped over three lines is three lines). A `def`, `for` or `with` counts its header
when the header names one, and its body statement by statement; a function whose name says parity
counts whole. Docstrings, comments and blank lines never count.

Loading the task's data (`common.data`, the chest X-ray pipeline) is the task's input, not harness:
the 2018 notebooks, too, loaded their data through their `common`. Reading a shared constant of the
model (`reference.CNN_LAYERS`, `densenet.STEM_CHANNELS`) is not harness either: it is a number of
the model, like a parameter. The papermill parameters cell is counted apart: it is the notebook's
interface (profile, variant, data, device, threads, where the record goes), in the place of the 2018
notebooks' constants cell.
"""
import ast
import json
import re
from pathlib import Path

# Objects of the harness the notebooks hold, besides the modules they import from `common`.
HARNESS_OBJECTS = {"run", "timer", "forward_timer", "checks", "metrics", "Timer",
                   "hardware", "versions", "accelerator"}  # the last three: what run.finish now gathers
# Modules of `common` that load the task's data.
DATA_MODULES = {"data", "datasets", "xray_images"}
PARITY = re.compile(r"parity", re.I)


def code_cells(path):
    notebook = json.loads(Path(path).read_text())
    language = notebook["metadata"].get("kernelspec", {}).get("language", "python").lower()
    parameters, body = [], []
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            (parameters if "parameters" in cell["metadata"].get("tags", []) else body).append(source)
    return language, parameters, body


def common_names(sources, language):
    """Names the notebook binds to modules of `common`: `from common import a, b as c` (Python),
    `x <- import("common.x")` (R)."""
    names = set()
    for source in sources:
        if language == "r":
            names.update(re.findall(r"^\s*(\w+)\s*<-\s*import\(\"common\.", source, re.M))
            continue
        for imported in re.findall(r"^\s*from common(?:\.\w+)* import ([\w ,]+)", source, re.M):
            names.update(part.split(" as ")[-1].strip() for part in imported.split(","))
        names.update(re.findall(r"^\s*import common\.\w+ as (\w+)", source, re.M))
    return (names - DATA_MODULES) | HARNESS_OBJECTS


def is_harness_name(name, harness):
    return name in harness or bool(PARITY.search(name))


def names_in(nodes):
    """The names a statement uses, but not a module read only for a shared constant (an UPPER_CASE
    attribute, `densenet.STEM_CHANNELS`: a number of the model, like a parameter), and attribute
    names that say parity."""
    found = set()
    for root in nodes:
        if root is None:
            continue
        constants = {id(node.value) for node in ast.walk(root)
                     if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr.isupper()}
        for node in ast.walk(root):
            if isinstance(node, ast.Name) and id(node) not in constants:
                found.add(node.id)
            elif isinstance(node, ast.Attribute) and PARITY.search(node.attr):
                found.add(node.attr)
    return found


def python_harness_lines(source, harness):
    """(line number, text) of every harness line of one cell."""
    lines = source.splitlines()
    counted = set()

    def span(node):
        return range(node.lineno, node.end_lineno + 1)

    def visit(statements):
        for node in statements:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                continue  # a docstring
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if PARITY.search(node.name):
                    counted.update(span(node))
                    continue
                header = node.decorator_list + ([node.args] if hasattr(node, "args") else []) + getattr(node, "bases", [])
                header_names = names_in(header)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    header_names |= {argument.arg for argument in node.args.args + node.args.kwonlyargs}
                if any(is_harness_name(name, harness) for name in header_names):
                    counted.update(range(min([node.lineno] + [d.lineno for d in node.decorator_list]), node.body[0].lineno))
                visit(node.body)
                continue
            bodies = [getattr(node, field) for field in ("body", "orelse", "finalbody") if isinstance(getattr(node, field, None), list)]
            if bodies and not isinstance(node, ast.Expr):
                header = [getattr(node, field, None) for field in ("target", "iter", "test")] + [
                    item.context_expr for item in getattr(node, "items", [])] + [
                    item.optional_vars for item in getattr(node, "items", [])]
                if any(is_harness_name(name, harness) for name in names_in(header)):
                    counted.update(range(node.lineno, node.body[0].lineno))
                for body in bodies:
                    visit(body)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
                continue
            if any(is_harness_name(name, harness) for name in names_in([node])) or isinstance(node, ast.ImportFrom) and node.module.startswith("common") and {
                    alias.asname or alias.name for alias in node.names} - DATA_MODULES:
                counted.update(span(node))

    # IPython magics (`%%writefile`, `%time`) are not Python: parsed as blank lines.
    visit(ast.parse("\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)).body)
    return [(number, lines[number - 1]) for number in sorted(counted)
            if lines[number - 1].strip() and not lines[number - 1].strip().startswith("#")]


def r_harness_lines(source, harness):
    """R: statements are gathered line by line until their brackets close; a statement that names a
    harness object (`run$finish(...)`, `reference$initial_weights(...)`) counts every line."""
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, harness))) + r")\b|parity", re.I)
    counted, statement, depth = [], [], 0
    for number, line in enumerate(source.splitlines(), 1):
        code = re.sub(r"#.*$", "", re.sub(r'"[^"]*"', '""', line))
        if not code.strip() and not statement:
            continue
        statement.append((number, line))
        depth += code.count("(") + code.count("[") - code.count(")") - code.count("]")
        if depth <= 0:
            if any(pattern.search(re.sub(r"\b\w+\$[A-Z][A-Z0-9_]*\b", "", re.sub(r"#.*$", "", text)))
                   for _, text in statement):
                counted.extend((n, text) for n, text in statement if text.strip() and not text.strip().startswith("#"))
            statement, depth = [], 0
    return counted


def harness_lines(path):
    """{'parameters': lines of the parameters cell, 'harness': [(cell, text)], 'code': code lines}."""
    language, parameters, body = code_cells(path)
    harness = common_names(body, language)
    found, code = [], 0
    for index, source in enumerate(body):
        code += sum(1 for line in source.splitlines() if line.strip() and not line.strip().startswith("#"))
        counter = r_harness_lines if language == "r" else python_harness_lines
        found.extend((index, text) for _, text in counter(source, harness))
    parameter_lines = [line for source in parameters for line in source.splitlines()
                       if line.strip() and not line.strip().startswith("#")]
    return {"parameters": parameter_lines, "harness": found, "code": code}
