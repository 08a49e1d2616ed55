"""The side-by-side reader: static pages under docs/, generated from the notebooks, the records and
the measured install costs, never edited by hand.

One page per task puts the chosen frameworks' notebooks in columns and the shared skeleton's
sections in rows (a CSS grid, so a row is as tall as its tallest cell and section tops line up);
a matrix page lists every task × framework with its status. The pages work from disk (file://):
the code is highlighted here with Pygments, and the page's own small script and style sit beside
it in docs/. The output is deterministic, so a test can tell when the committed docs/ is stale.
"""
import hashlib
import html
import json
import os
from pathlib import Path

from runner.frameworks import RUNNABLE, UNAVAILABLE, notebook_name
import re

from common.params import TASKS
from common.params import get_params
from runner.report import SWEEP_TASKS, TASK_TITLES, baselines_text, cell_text, latest_by_cell, sweep_cell, validity

ASSETS = Path(__file__).resolve().parent / "reader_assets"
DEFAULT_COLUMNS = ("pytorch", "tensorflow")
MAX_COLUMNS = 4
# The skeleton's rows: key, the markdown heading that opens the section (None: found otherwise).
SECTIONS = (
    ("about", "About", None),
    ("parameters", "Parameters", None),
    ("imports", "Setup", "## Setup"),
    ("data", "Data", "## Data"),
    ("model", "Model", "## Model"),
    ("train", "Train / Predict (timed)", ("## Train (timed)", "## Predict (timed)")),
    ("evaluate", "Evaluate", "## Evaluate"),
    ("record", "Record", "## Record"),
)
# The package whose version heads each framework's column.
VERSION_KEYS = {"pytorch": "torch", "tensorflow": "tensorflow", "keras_tf": "keras", "keras_jax": "keras",
                "keras_torch": "keras", "jax_flax": "flax", "onnxruntime": "onnxruntime", "gluon": "mxnet",
                "mxnet": "mxnet", "chainer": "chainer", "paddle": "paddle", "lasagne": "theano",
                "keras_theano": "keras", "keras_r": "keras"}


# ----------------------------------------------------------------------------- notebooks

def notebook_sections(path):
    """{section key: {"code": str, "notes": str}} of one notebook, by the skeleton's headings."""
    notebook = json.loads(Path(path).read_text())
    cells = notebook["cells"]
    sections = {key: {"code": [], "notes": []} for key, _, _ in SECTIONS}
    headings = {}
    for key, _, heading in SECTIONS:
        for text in ((heading,) if isinstance(heading, str) else heading or ()):
            headings[text] = key
    current = "about"
    for index, cell in enumerate(cells):
        source = "".join(cell["source"])
        if cell["cell_type"] == "code":
            if "parameters" in cell.get("metadata", {}).get("tags", []):
                sections["parameters"]["code"].append(source)
            else:
                sections[current]["code"].append(source)
            continue
        lines = source.splitlines()
        if lines and lines[0] in headings:
            current = headings[lines[0]]
            lines = lines[1:]
        elif index == 0 and lines and lines[0].startswith("# "):
            lines = lines[1:]
        text = "\n".join(lines).strip()
        if text:
            sections[current]["notes"].append(text)
    return {key: {"code": "\n\n".join(part.rstrip() for part in value["code"]),
                  "notes": "\n\n".join(value["notes"])} for key, value in sections.items()}


def notebook_language(path):
    metadata = json.loads(Path(path).read_text())["metadata"]
    language = metadata.get("kernelspec", {}).get("language") or "python"
    return language.lower()


def highlight(code, language):
    """Pygments' tokens as HTML: every non-blank token its own <span class="t …">, so that the
    page's script can compare columns token by token; whitespace stays plain text. Kept in the
    cache under a digest of the code, the language, Pygments' version and this module's source:
    every run regenerates the reader, and highlighting its 63 notebooks took 2.8 s of each."""
    import pygments
    from common.paths import cache_root, write_whole

    digest = hashlib.sha256("\0".join((language, code, pygments.__version__, _SOURCE_DIGEST)).encode()).hexdigest()
    path = cache_root() / "reader" / f"{digest[:32]}.html"
    if path.exists():
        return path.read_text()
    path.parent.mkdir(parents=True, exist_ok=True)
    highlighted = _highlight(code, language)
    write_whole(path, highlighted)  # the test suite's two workers may fill it at once
    return highlighted


def _highlight(code, language):
    from pygments.lexers import get_lexer_by_name
    from pygments.token import STANDARD_TYPES

    lexer = get_lexer_by_name("r" if language == "r" else "python3", stripnl=False, ensurenl=False)
    out = []
    for token_type, value in lexer.get_tokens(code):
        css = None
        while css is None:
            css = STANDARD_TYPES.get(token_type)
            token_type = token_type.parent
        for piece in _split_blanks(value):
            if piece.isspace():
                out.append(html.escape(piece))
            else:
                out.append(f'<span class="t {css}">{html.escape(piece)}</span>' if css
                           else f'<span class="t">{html.escape(piece)}</span>')
    return "".join(out)


def _split_blanks(text):
    pieces, current, blank = [], "", None
    for character in text:
        is_blank = character.isspace()
        if current and is_blank != blank:
            pieces.append(current)
            current = ""
        current += character
        blank = is_blank
    if current:
        pieces.append(current)
    return pieces


_SOURCE_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- figures and costs

def figure_text(table_cells, task, framework):
    """The column head's figure for a framework's default variant: its newest cell of the task in
    the README's tables (`report.latest_by_cell`: repeats combined, with their spread), or why
    there is none."""
    candidates = [record for (row, _), record in table_cells.get(task, {}).items() if row == framework.title]
    if not candidates:
        return "no record yet", None
    record = max(candidates, key=lambda candidate: candidate.get("started_at", ""))
    valid, why = validity(record)
    if not valid:
        return why, record
    if task in SWEEP_TASKS:
        threads = record.get("hardware", {}).get("threads_pinned")
        text = sweep_cell(dict(record, notebook=None)).replace("**", "") + f" on {threads} thread(s)"
    else:
        text = cell_text(dict(record, notebook=None)).replace("**", "")
    return text + ("" if record.get("spread") else " (1 run)"), record


def install_cost_text(costs, environment):
    cost = costs.get(f"{environment} (cpu)")
    if not cost:
        return "install cost: not measured yet"
    from runner.install_costs import size_text

    return (f"install: {size_text(cost['size_mb'])} on disk · built in {cost['build_seconds']:.0f} s · "
            f"cold import {cost['import_seconds']:.1f} s")


# ----------------------------------------------------------------------------- pages

def _link(from_folder, target):
    return html.escape(os.path.relpath(target, from_folder))


def prose(markdown):
    """A notebook's markdown as HTML: paragraphs with their lines joined and `code` kept as code,
    a heading inside the notes (the closing section's) as a heading, fenced blocks (the commands
    to run) as they are written."""
    parts = []
    for index, piece in enumerate(re.split(r"```[a-z]*\n(.*?)```", markdown.strip(), flags=re.DOTALL)):
        if index % 2:  # inside a fence
            parts.append("<pre class=\"command\"><code>" + html.escape(piece.rstrip("\n")) + "</code></pre>")
            continue
        for block in re.split(r"\n\s*\n", piece.strip()):
            if not block.strip():
                continue
            heading = re.match(r"#+ (.*)", block.strip())
            text = heading.group(1) if heading else " ".join(line.strip() for line in block.splitlines())
            tag = "h4" if heading else "p"
            parts.append(f"<{tag}>" + re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text)) + f"</{tag}>")
    return "".join(parts)


def column_head(framework, task, table_cells, costs, docs, root, notebooks_dir):
    text, record = figure_text(table_cells, task, framework)
    version = (record or {}).get("versions", {}).get(VERSION_KEYS.get(framework.name, ""), "")
    links = [f'<a href="{_link(docs, notebooks_dir / notebook_name(framework, task))}">notebook</a>']
    if record and record.get("notebook") and (root / record["notebook"]).exists():
        links.append(f'<a href="{_link(docs, root / record["notebook"])}">executed</a>')
    where = ""
    if record:
        hardware = record.get("hardware", {})
        threads = hardware.get("threads")
        where = hardware.get("gpu_name") or (f"{hardware.get('cpu_model', 'CPU')}, {threads or '?'} "
                                             + ("thread" if threads == 1 else "threads"))
        where = f" · {html.escape(where)}, {html.escape(record.get('profile', ''))} profile"
    return (f'<div class="head"><h2>{html.escape(framework.title)}'
            + (f' <span class="version">{html.escape(version)}</span>' if version else "")
            + f'</h2><p class="figure">{html.escape(text)}{where}</p>'
            + f'<p class="cost">{html.escape(install_cost_text(costs, framework.environment))}</p>'
            + f'<p class="links">{" · ".join(links)}</p></div>')


def frameworks_for(task, notebooks_dir):
    return [f for f in RUNNABLE.values() if (notebooks_dir / notebook_name(f, task)).exists()]


def navigation(current, tasks):
    items = ['<a href="index.html"' + (' aria-current="page"' if current == "index" else "") + ">All tasks</a>"]
    for task in tasks:
        items.append(f'<a href="{task}.html"' + (' aria-current="page"' if current == task else "")
                     + f">{html.escape(task)}</a>")
    return '<nav class="tasks">' + " ".join(items) + "</nav>"


def page(title, body):
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{html.escape(title)}</title>\n<link rel=\"stylesheet\" href=\"reader.css\">\n"
            "</head>\n<body>\n" + body + "\n</body>\n</html>\n")


def task_page(task, frameworks, table_cells, costs, docs, root, notebooks_dir, tasks):
    title = TASK_TITLES[task].format(**get_params(task))
    choices = "".join(
        f'<label><input type="checkbox" name="fw" value="{f.name}"> {html.escape(f.title)}</label>'
        for f in frameworks)
    store = []
    for framework in frameworks:
        path = notebooks_dir / notebook_name(framework, task)
        sections, language = notebook_sections(path), notebook_language(path)
        cells = [f'<div class="cell head-cell" data-fw="{framework.name}" data-section="head">'
                 f'{column_head(framework, task, table_cells, costs, docs, root, notebooks_dir)}</div>']
        for key, _, _ in SECTIONS:
            section = sections[key]
            notes = f'<div class="notes">{prose(section["notes"])}</div>' if section["notes"] else ""
            code = (f'<pre class="code"><code>{highlight(section["code"], language)}</code></pre>'
                    if section["code"] else "")
            cells.append(f'<div class="cell" data-fw="{framework.name}" data-section="{key}">{notes}{code}</div>')
        store.append("\n".join(cells))
    labels = "".join(f'<div class="section-title" data-section="{key}">{html.escape(label)}</div>'
                     for key, label, _ in SECTIONS)
    baselines = baselines_text(table_cells.get(task, {})) if task == "GPT" else ""
    body = (navigation(task, tasks)
            + f"<header><h1>{html.escape(title)}</h1>"
            "<p>The same model in each framework, one column each; each row is one section of the "
            "shared notebook skeleton. Choose up to four frameworks; the address keeps your choice, "
            "so it can be shared.</p>"
            + (f"<p>{html.escape(baselines)}</p>" if baselines else "")
            + "</header>\n"
            f'<form class="controls" data-default="{",".join(DEFAULT_COLUMNS)}" data-max="{MAX_COLUMNS}">'
            f'<fieldset class="choices"><legend>Frameworks</legend>{choices}</fieldset>'
            '<label class="diff-toggle"><input type="checkbox" name="diff"> mark what differs from the left-hand column</label>'
            '<p class="message" role="status"></p></form>\n'
            '<main class="grid" id="grid"></main>\n'
            f'<div class="store" hidden>{labels}\n' + "\n".join(store) + "</div>\n"
            '<script src="reader.js"></script>')
    return page(f"{task} side by side · deep-learning Rosetta Stone", body)


def matrix_page(table_cells, docs, root, notebooks_dir, tasks):
    header = "<tr><th>framework</th>" + "".join(f"<th>{html.escape(t)}</th>" for t in TASKS) + "</tr>"
    rows = []
    for framework in RUNNABLE.values():
        cells = []
        for task in TASKS:
            if not (notebooks_dir / notebook_name(framework, task)).exists():
                cells.append('<td class="none">no notebook</td>')
                continue
            text, record = figure_text(table_cells, task, framework)
            status = "ok" if record and validity(record)[0] else "invalid" if record else "none"
            columns = ",".join(dict.fromkeys(("pytorch", framework.name)))
            cells.append(f'<td class="{status}"><a href="{task}.html#fw={columns}">{html.escape(text)}</a></td>')
        rows.append(f"<tr><th>{html.escape(framework.title)}</th>" + "".join(cells) + "</tr>")
    for framework in UNAVAILABLE:
        cells = [f'<td class="cannot">cannot run here: {html.escape(framework.reason)}</td>'
                 if task in framework.tasks else '<td class="none">—</td>' for task in TASKS]
        rows.append(f"<tr><th>{html.escape(framework.title)}</th>" + "".join(cells) + "</tr>")
    body = (navigation("index", tasks)
            + "<header><h1>The deep-learning Rosetta Stone</h1><p>Every task × framework: its latest "
            "valid figure from the records (the README's validity rule), or why there is none. A "
            "cell opens the task's side-by-side page with that framework beside PyTorch.</p></header>\n"
            f'<main><table class="matrix">{header}{"".join(rows)}</table></main>')
    return page("Deep-learning Rosetta Stone · all tasks", body)


def render_site(docs, records, costs, notebooks_dir, root):
    """{file name: text} of the site as it would be written to `docs` (links are relative to it)."""
    from pygments.formatters import HtmlFormatter

    docs, notebooks_dir, root = Path(docs).resolve(), Path(notebooks_dir).resolve(), Path(root).resolve()
    tasks = [task for task in TASKS if frameworks_for(task, notebooks_dir)]
    table_cells = latest_by_cell(records)
    site = {}
    for task in tasks:
        site[f"{task}.html"] = task_page(task, frameworks_for(task, notebooks_dir), table_cells, costs,
                                         docs, root, notebooks_dir, tasks)
    site["index.html"] = matrix_page(table_cells, docs, root, notebooks_dir, tasks)
    pygments_css = HtmlFormatter(style="friendly").get_style_defs(".code")
    site["reader.css"] = (ASSETS / "reader.css").read_text() + "\n/* Pygments, style 'friendly' */\n" + pygments_css + "\n"
    site["reader.js"] = (ASSETS / "reader.js").read_text()
    return site


def write_site(docs, records, costs, notebooks_dir, root):
    """Write docs/: index.html (the matrix), one <task>.html per task with notebooks, reader.css
    and reader.js; remove pages of tasks that no longer have any. Returns the paths written."""
    docs = Path(docs)
    docs.mkdir(parents=True, exist_ok=True)
    site = render_site(docs, records, costs, notebooks_dir, root)
    for name, text in site.items():
        (docs / name).write_text(text)
    for stale in docs.glob("*.html"):
        if stale.name not in site:
            stale.unlink()
    return [docs / name for name in site]
