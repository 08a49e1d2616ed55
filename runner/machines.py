"""The machines in the records: a results page for each (docs/machines/<machine>.md: every task's
tables, their evidence and plots), and the reference machine of each task, whose figures the
README's matrix and the side-by-side reader show.

The reference rule: for each task, the CPU machine with the most valid default-variant cells in a
shown profile (quick or full); a tie goes to the machine whose newest valid run is newer. A GPU
machine with valid cells of the task gets a column of its own beside it, chosen by the same rule.
Records made before today's protocol (runner.verdict.before_protocol) leave every table.
"""
import re

from common import peak as common_peak
from common.params import DEVICE_SWEEP_TASKS, TASKS, THREAD_SWEEP_TASKS
from common.probe import hardware_label
from runner import report
from runner.frameworks import RUNNABLE, notebook_name
from runner.verdict import HEADLINES, before_protocol, validity

# What the matrix shows of a task: its headline, in a unit that reads.
MATRIX_UNITS = {"CNN": "img/s", "Inference": "img/s", "RNN": "seq/s", "MultiGPU": "img/s, all devices",
                "FCN5": "ms/batch, every core", "GPT": "tok/s"}


def machine_of(record):
    return hardware_label(record.get("hardware", {}))


def slug(label):
    return re.sub(r"-+", "-", "".join(c if c.isalnum() else "-" for c in label.lower())).strip("-")


def current(records):
    """The records today's tables draw on: those made under the current protocol."""
    return [record for record in records if not before_protocol(record)]


def by_machine(records):
    """{machine label: its records}, in the order machines first appear."""
    machines = {}
    for record in records:
        machines.setdefault(machine_of(record), []).append(record)
    return machines


def is_gpu(records):
    return any(record.get("hardware", {}).get("gpu_count") for record in records)


def matrix_record(task, task_cells, framework):
    """The one cell of a framework's default variant the matrix shows for a task on one machine:
    FCN5 on every core (its most threads), MultiGPU on all devices from RAM."""
    title = RUNNABLE[framework].title
    candidates = [record for (row, _), record in task_cells.items() if row == title]
    if task in THREAD_SWEEP_TASKS:
        candidates.sort(key=lambda record: record.get("hardware", {}).get("threads_pinned") or 0)
        candidates = candidates[-1:]
    if task in DEVICE_SWEEP_TASKS:
        candidates = [record for record in candidates if report.device_setting(record) == (0, "ram")]
    return max(candidates, key=lambda record: record.get("started_at", ""), default=None)


def valid_cells(task, records):
    """{framework: record} of the valid matrix cells of `task` in one machine's records."""
    task_cells = report.latest_by_cell(records).get(task, {})
    found = {}
    for framework in RUNNABLE:
        record = matrix_record(task, task_cells, framework)
        if record is not None and validity(record)[0]:
            found[framework] = record
    return found


def reference_machines(records, gpu=False):
    """{task: machine label} by the reference rule, over CPU machines (or GPU ones)."""
    chosen = {}
    for task in TASKS:
        best = None
        for machine, machine_records in by_machine(current(records)).items():
            if is_gpu(machine_records) != gpu:
                continue
            cells = valid_cells(task, machine_records)
            if not cells:
                continue
            score = (len(cells), max(record.get("started_at", "") for record in cells.values()))
            if best is None or score > best[0]:
                best = (score, machine)
        if best:
            chosen[task] = best[1]
    return chosen


def matrix_text(task, record, label):
    """The cell: the headline in bold, a reference link (`label`) to the executed notebook."""
    value = float(record["metrics"][HEADLINES[task][0]])
    figure = report._format(1000 * value if task == "FCN5" else value)
    return f"[**{figure}**][{label}]" if record.get("notebook") else f"**{figure}**"


def matrix_markdown(records, link=str, page_link=str, notebooks_dir=None):
    """The README's matrix: a row per framework, a column per task (and a GPU column beside a task
    that has one), each cell the headline of the framework's default variant on the task's
    reference machine, linked to the executed notebook; then which machine each column is."""
    records = current(records)
    machines = by_machine(records)
    cpu, gpu = reference_machines(records), reference_machines(records, gpu=True)
    # Each task's CPU column, then its GPU column beside it.
    columns = [(task, chosen[task]) for task in TASKS for chosen in (cpu, gpu) if task in chosen]
    if not columns:
        return "_No valid full or quick run recorded yet: run `python3 run_all.py`._"
    cells = {(task, machine): valid_cells(task, machines[machine]) for task, machine in columns}
    header = "| framework | " + " | ".join(
        f"[{task}]({page_link('docs/' + task + '.html')}) {MATRIX_UNITS[task]}"
        + (" (GPU)" if is_gpu(machines[machine]) else "") for task, machine in columns) + " |"
    lines, targets = [header, "|" + " --- |" * (len(columns) + 1)], []
    for framework in RUNNABLE.values():
        row = []
        for task, machine in columns:
            record = cells[(task, machine)].get(framework.name)
            written = notebooks_dir is None or (notebooks_dir / notebook_name(framework, task)).exists()
            label = f"{framework.name}-{task}" + ("-gpu" if is_gpu(machines[machine]) else "")
            row.append(matrix_text(task, record, label) if record else "—" if written else "")
            if record and record.get("notebook"):
                targets.append(f"[{label}]: {link(record['notebook'])}")
        if any(row):
            lines.append(f"| {framework.title} | " + " | ".join(row) + " |")
    used = {}
    for task, machine in columns:
        used.setdefault(machine, []).append(task)
    lines += ["", "Measured on: " + "; ".join(
        f"{', '.join(tasks)}: [{machine}]({page_link('docs/machines/' + slug(machine) + '.md')})"
        for machine, tasks in used.items()) + ". A figure links to its executed notebook; — : no valid run there.",
              ""] + targets
    return "\n".join(lines)


def with_valid_columns(records):
    """The records whose column (task, machine, profile, data set, threads) holds a valid cell: no
    table shows a column of failures only."""
    valid_columns = {(task, column) for task, task_cells in report.latest_by_cell(records).items()
                     for (_, column), record in task_cells.items() if validity(record)[0]}
    return [record for record in records if (record.get("task"), report.cell_column(record)) in valid_columns]


def machine_page(machine, records, plot_paths, link, costs=None, loops=None):
    """The results page of one machine: every task's tables (one column per profile, data set and
    thread count it ran, each with a valid cell), their checks, plots, and what its environments cost."""
    hardware = records[-1].get("hardware", {})
    shown = with_valid_columns(records)
    without = [record for record in records if record not in shown and record.get("profile") in report.SHOWN_PROFILES]
    peak = common_peak.of_record(hardware)
    facts = [f"CPU: {hardware.get('cpu_model', '?')}, {hardware.get('cpu_cores', '?')} cores"]
    if hardware.get("gpu_count"):
        facts.append(f"GPU: {hardware.get('gpu_name')} × {hardware['gpu_count']}")
    for precision in ("fp32", "bf16"):
        if peak.get(precision):  # None: not native here (common.peak measures no emulated bf16 peak)
            facts.append(f"{precision} peak: {peak[precision]['gflops']:.0f} GFLOP/s ({peak[precision].get('source', '')})")
        elif precision in peak:
            facts.append(f"{precision}: not native")
    runs = sorted({record.get("started_at", "")[:10] for record in records})
    records = shown
    parts = [f"# Results on {machine}", "",
             "Generated by `run_all.py` from `results/records.jsonl`: every run on this machine under the current "
             "protocol ([the method](../method.md)). " + "; ".join(facts) + f". Runs from {runs[0]} to {runs[-1]}.",
             "", report.results_markdown(records, plot_paths, link) if records else ""]
    if without:
        # Columns with no valid cell stay out of the tables; what ran there is listed with its reason.
        parts += ["", "### Runs in columns without a valid figure", ""]
        parts += [f"- {record.get('task')} · {report.row_title(record)} · {record.get('profile')} profile, "
                  f"{record.get('data') or 'unknown'} data: {validity(record)[1]}"
                  + (f" [nb]({link(record['notebook'])})" if record.get("notebook") else "")
                  for record in sorted(without, key=lambda r: (r.get("task", ""), r.get("started_at", "")))]
    if costs:
        parts += ["", costs]
    if loops:
        parts += ["", loops]
    return "\n".join(parts) + "\n"


def index_page(records, old_count):
    """docs/machines/index.md: every machine with how many of its runs are valid."""
    lines = ["# Results by machine", "",
             "Generated by `run_all.py`. One page per machine in the records; the README shows each task's "
             "reference machine (the rule is in [the method](../method.md)).", "",
             "| machine | runs | valid | newest run |", "| --- | --- | --- | --- |"]
    for machine, machine_records in by_machine(current(records)).items():
        shown = [r for r in machine_records if r.get("profile") in report.SHOWN_PROFILES]
        if not shown:
            continue
        valid = sum(validity(record)[0] for record in shown)
        newest = max(record.get("started_at", "") for record in shown)[:10]
        lines.append(f"| [{machine}]({slug(machine)}.md) | {len(shown)} | {valid} | {newest} |")
    lines += ["", f"{old_count} record(s) made before today's protocol (a check it requires did not exist yet) stay in "
              "`results/records.jsonl` and leave the tables."]
    return "\n".join(lines) + "\n"
