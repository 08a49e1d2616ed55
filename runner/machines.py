"""The machines in the records: a results page for each (docs/machines/<machine>.md: every task's
tables, their evidence and plots), the one CPU and one GPU machine whose tables the README shows,
and the reference machine of each task, whose figures the side-by-side reader shows.

The rule, for the README (over every task) and for a task (the reader): the machine with the most
valid default-variant cells in a shown profile (quick or full); a tie goes to the machine whose
newest valid run is newer. CPU and GPU machines are chosen apart. Records made before today's
protocol (runner.verdict.before_protocol) leave every table.
"""

from common import peak as common_peak
from common.params import DEVICE_SWEEP_TASKS, TASKS, THREAD_SWEEP_TASKS
from common.paths import slug
from common.probe import hardware_label
from runner import report
from runner.frameworks import RUNNABLE, notebook_name
from runner.verdict import HEADLINES, before_protocol, validity

# What the matrix shows of a task: its headline, in a unit that reads.
MATRIX_UNITS = {"CNN": "img/s", "Inference": "img/s", "RNN": "seq/s", "MultiGPU": "img/s, all devices",
                "FCN5": "ms/batch, every core", "GPT": "tok/s"}


def machine_of(record):
    return hardware_label(record.get("hardware", {}))


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


def best_machine(records, tasks, gpu=False):
    """The CPU (or GPU) machine with the most valid matrix cells over `tasks`, a tie going to the one
    whose newest valid run is newer; None where no machine of that kind has one."""
    best = None
    for machine, machine_records in by_machine(current(records)).items():
        if is_gpu(machine_records) != gpu:
            continue
        cells = [record for task in tasks for record in valid_cells(task, machine_records).values()]
        if cells:
            score = (len(cells), max(record.get("started_at", "") for record in cells))
            if best is None or score > best[0]:
                best = (score, machine)
    return best[1] if best else None


def reference_machines(records, gpu=False):
    """{task: machine label} by the reference rule, over CPU machines (or GPU ones): the reader's."""
    chosen = {task: best_machine(records, (task,), gpu) for task in TASKS}
    return {task: machine for task, machine in chosen.items() if machine}


def front_machine(records, gpu=False):
    """The one CPU (or GPU) machine whose table the README shows: the rule over every task."""
    return best_machine(records, TASKS, gpu)


def matrix_text(task, record, link=str):
    """The cell: the headline in bold, linked inline to the executed notebook."""
    value = float(record["metrics"][HEADLINES[task][0]])
    figure = report._format(1000 * value if task == "FCN5" else value)
    return f"[**{figure}**]({link(record['notebook'])})" if record.get("notebook") else f"**{figure}**"


def machine_table(cells, link=str, page_link=str, notebooks_dir=None):
    """One machine's table for the README from its {task: valid_cells}: a row per framework, a column
    per task with a valid cell there, each cell the headline of the framework's default variant
    linked to its notebook; the frameworks with no valid cell there named below it."""
    tasks = [task for task in TASKS if cells[task]]
    lines = ["| framework | " + " | ".join(f"[{task}]({page_link('docs/' + task + '.html')}) {MATRIX_UNITS[task]}"
                                          for task in tasks) + " |",
             "|" + " --- |" * (len(tasks) + 1)]
    without = []
    for framework in RUNNABLE.values():
        row = []
        for task in tasks:
            record = cells[task].get(framework.name)
            written = notebooks_dir is None or (notebooks_dir / notebook_name(framework, task)).exists()
            row.append(matrix_text(task, record, link) if record else "—" if written else "")
        if any(cell not in ("", "—") for cell in row):
            lines.append(f"| {framework.title} | " + " | ".join(row) + " |")
        elif any(row):
            without.append(framework.title)
    return lines + ([] if not without else ["", "No valid run on this machine: " + ", ".join(without) + "."])


def matrix_markdown(records, link=str, page_link=str, notebooks_dir=None):
    """The README's tables: one per machine kind (the CPU machine of front_machine, then the GPU
    one where a GPU has run), each from that single machine."""
    records = current(records)
    machines = by_machine(records)
    chosen = [(kind, front_machine(records, gpu=kind == "GPU")) for kind in ("CPU", "GPU")]
    chosen = [(kind, machine) for kind, machine in chosen if machine]
    if not chosen:
        return "_No valid full or quick run recorded yet: run `python3 run_all.py`._"
    parts = []
    for kind, machine in chosen:
        cells = {task: valid_cells(task, machines[machine]) for task in TASKS}
        profiles = sorted({record.get("profile") for task_cells in cells.values() for record in task_cells.values()})
        parts += [f"**{kind}: [{machine}]({page_link('docs/machines/' + slug(machine) + '.md')})** "
                  f"({', '.join(profiles)} profile)", ""]
        parts += machine_table(cells, link, page_link, notebooks_dir) + [""]
    parts.append("A figure opens its executed notebook; — : no valid run on that machine; every machine: "
                 f"[results by machine]({page_link('docs/machines/index.md')}).")
    return "\n".join(parts)


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
        # Columns with no valid cell stay out of the tables; what ran there is listed, once per
        # task, row, profile, data and reason (a run skipped in every repeat is one line), newest notebook linked.
        if not records:
            parts[-1] = "No valid figure on this machine: every run here was skipped or failed, for the reasons below."
        parts += ["", "### Runs in columns without a valid figure", ""]
        lines = {}
        for record in sorted(without, key=lambda r: (r.get("task", ""), r.get("started_at", ""))):
            data = record.get("data") or "no data loaded"
            # A thread count of the sweep, a device setting of MultiGPU, is a column of its own.
            setting = (f" · {record.get('hardware', {}).get('threads_pinned')} thread(s)" if record.get("task") in THREAD_SWEEP_TASKS
                       else f" · {report.device_setting(record)}" if record.get("task") in DEVICE_SWEEP_TASKS else "")
            key = (f"- {record.get('task')} · {report.row_title(record)}{setting} · {record.get('profile')} profile, "
                   f"{data if record.get('data') is None else data + ' data'}: {validity(record, whole=True)[1]}")
            count, notebook = lines.get(key, (0, None))
            lines[key] = (count + 1, record.get("notebook") or notebook)
        parts += [key + (f" ({count} runs)" if count > 1 else "") + (f" [nb]({link(notebook)})" if notebook else "")
                  for key, (count, notebook) in lines.items()]
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
