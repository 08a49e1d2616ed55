"""From the records to what a reader sees: the README's matrix (each task on its reference machine),
a results page per machine under docs/machines/ with its plots, the method page's generated
section (every bound and its margins) and the side-by-side reader (docs/*.html). `render` says
what every generated text file should hold (the tests compare it with the committed files);
`regenerate` writes them and draws the plots."""
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METHOD_PAGE = "method.md"
MACHINES_FOLDER = "machines"
# A link to an executed notebook, as the generated pages write it (relative to the page).
NOTEBOOK_LINK = re.compile(r"""[^\s()"'<>\[\]]*results/notebooks/[^\s()"'<>\[\]]+?\.ipynb""")


def relative(path):
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(Path(path).resolve())


def linker(folder):
    """A function turning a path stored relative to the repository into a link from `folder`."""
    folder = Path(folder).resolve()
    return lambda path: os.path.relpath(ROOT / path, folder)  # ROOT / an absolute path is that path


def replace_generated(text, markdown, where="the page"):
    """`text` with what lies between the generated-section markers replaced by `markdown`."""
    from runner.report import BEGIN_MARKER, END_MARKER

    pattern = re.compile(re.escape(BEGIN_MARKER) + r".*?" + re.escape(END_MARKER), re.S)
    if not pattern.search(text):
        raise ValueError(f"{where} lacks the results markers {BEGIN_MARKER!r} … {END_MARKER!r}")
    return pattern.sub(lambda _: f"{BEGIN_MARKER}\n{markdown}\n{END_MARKER}", text)


def machine_plots(results, machine_records):
    """{task: the plot's path relative to the repository} of one machine's plots."""
    from runner import machines, plots

    folder = Path(results) / "plots" / machines.slug(machines.machine_of(machine_records[0]))
    return {task: relative(plots.plot_path(folder, task)) for task in plots.valid_cells(machine_records)}


def shown_machines(records):
    """{machine: its records} of the machines with a run in a shown profile."""
    from runner import machines, report

    return {machine: machine_records for machine, machine_records in machines.by_machine(records).items()
            if any(record.get("profile") in report.SHOWN_PROFILES for record in machine_records)}


def render(results, readme, notebooks_dir):
    """{path: text} of every generated text file: the README, the method page (where they exist),
    every machine page and its index, and the reader's pages."""
    from common import records
    from runner import install_costs, machines, margins, plain_loops, reader

    results, readme, notebooks_dir = Path(results), Path(readme), Path(notebooks_dir)
    all_records = records.read_records(results / "records.jsonl")
    shown = machines.current(all_records)
    old_count = len(all_records) - len(shown)
    docs = readme.resolve().parent / "docs"
    costs, loops = install_costs.read(results), plain_loops.read(results)
    files = {}
    if readme.exists():
        matrix = machines.matrix_markdown(shown, linker(readme.parent), linker(readme.parent), notebooks_dir)
        files[readme] = replace_generated(readme.read_text(), matrix, str(readme))
    method = docs / METHOD_PAGE
    if method.exists():
        files[method] = replace_generated(method.read_text(), margins.markdown(shown, margins.read_broken(results))
                                          + f"\n\n{old_count} record(s) in `results/records.jsonl` were made before "
                                          "today's protocol (they lack a check it requires) and leave the tables.",
                                          str(method))
    pages = docs / MACHINES_FOLDER
    for machine, machine_records in shown_machines(shown).items():
        machine_costs = {key: cost for key, cost in costs.items() if cost.get("machine") == machine}
        files[pages / f"{machines.slug(machine)}.md"] = machines.machine_page(
            machine, machine_records, machine_plots(results, machine_records), linker(pages),
            install_costs.markdown(machine_costs) if machine_costs else None,
            plain_loops.markdown(machine_records, loops) or None)
    files[pages / "index.md"] = machines.index_page(all_records, old_count)
    reference = machines.reference_machines(shown)
    on_reference = [record for record in shown if machines.machine_of(record) == reference.get(record.get("task"))]
    for name, text in reader.render_site(docs, on_reference, costs, notebooks_dir, ROOT).items():
        files[docs / name] = text
    return files


def leftover_files(readme, files):
    """Generated-looking files beside `readme` that `files` (render's) does not hold: an old
    machine's page, the reader page of a task without notebooks."""
    docs = Path(readme).resolve().parent / "docs"
    generated = list(docs.glob("*.html")) + list((docs / MACHINES_FOLDER).glob("*.md"))
    return [path for path in generated if path not in files]


def unlinked_notebooks(results, files):
    """The executed notebooks of the shown profiles (results/notebooks/<machine>/<profile>/) that no
    page of `files` (render's) links to (a run's records made before today's protocol, or an older
    run's name no longer written), with the files the runner kept beside them (`<name>.<file>`,
    runner.notebook_run.keep_artifacts). Smoke runs' notebooks are never shown, and stay."""
    from runner.report import SHOWN_PROFILES

    linked = {(path.parent / match.group(0)).resolve()
              for path, text in files.items() for match in NOTEBOOK_LINK.finditer(text)}
    unlinked = []
    for folder in (folder for profile in SHOWN_PROFILES for folder in (Path(results) / "notebooks").glob(f"*/{profile}/")):
        notebooks = sorted(folder.glob("*.ipynb"), key=lambda notebook: -len(notebook.stem))
        gone = {notebook for notebook in notebooks if notebook.resolve() not in linked}
        for path in sorted(folder.iterdir()):
            # A kept file belongs to the notebook with the longest name it starts with.
            owner = path if path.suffix == ".ipynb" else next(
                (notebook for notebook in notebooks if path.name.startswith(notebook.stem + ".")), None)
            if owner in gone:
                unlinked.append(path)
    return unlinked


def stale_files(results, readme, notebooks_dir):
    """Generated files that differ from what `render` makes, the leftovers it would not make, and
    the executed notebooks no page links to."""
    files = render(results, readme, notebooks_dir)
    stale = [path for path, text in files.items() if not path.exists() or path.read_text() != text]
    return stale + leftover_files(readme, files) + unlinked_notebooks(results, files)


def regenerate(results, readme, notebooks_dir):
    """Write every generated file from `results`/records.jsonl, draw each machine's plots, and
    remove the generated files of what no longer exists and the executed notebooks no page links to."""
    from common import records
    from runner import machines, plots

    results, readme = Path(results), Path(readme)
    if not readme.exists():
        print(f"[run] {readme} not found: tables not written")
        return
    shown = machines.current(records.read_records(results / "records.jsonl"))
    for machine, machine_records in shown_machines(shown).items():
        plots.plot_tasks(machine_records, results / "plots" / machines.slug(machine))
    files = render(results, readme, notebooks_dir)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for path in leftover_files(readme, files) + unlinked_notebooks(results, files):
        path.unlink()
    for folder in (results / "notebooks").glob("*/*/"):
        if not any(folder.iterdir()):
            folder.rmdir()
            if not any(folder.parent.iterdir()):
                folder.parent.rmdir()
    pages = [path for path in files if path.parent.name == MACHINES_FOLDER]
    print(f"[run] {relative(readme)}, {len(pages) - 1} machine page(s) and the reader regenerated from "
          f"{len(shown)} record(s)")
