"""One bar chart per task from the records the README shows. matplotlib is imported here, lazily,
because only the runner's environment draws plots; notebooks never import this module."""
from pathlib import Path

from common.params import DEVICE_SWEEP, DEVICE_SWEEP_TASKS
from runner.report import (HEADLINES, SWEEP_TASKS, column_title, device_groups, latest_by_cell, row_title,
                           sweep_groups, validity)


def valid_cells(records):
    """{task: its valid shown cells} for each task that has any: the tasks plot_tasks draws."""
    found = {}
    for task, cells in latest_by_cell(records).items():
        valid = {key: record for key, record in cells.items() if validity(record)[0]}
        if valid:
            found[task] = valid
    return found


def plot_path(out_dir, task):
    return Path(out_dir) / f"{task}.png"


def plot_tasks(records, out_dir):
    """Write results/<task>.png for each task with valid shown records; return {task: path}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    for task, valid in valid_cells(records).items():
        metric, unit = HEADLINES[task]
        if task in SWEEP_TASKS:
            written[task] = plot_sweep(plt, task, valid, out_dir)
            continue
        if task in DEVICE_SWEEP_TASKS:
            written[task] = plot_devices(plt, task, valid, out_dir)
            continue
        rows = sorted({row for row, _ in valid})
        columns = sorted({column for _, column in valid})
        figure, axes = plt.subplots(figsize=(7, 0.5 + 0.45 * len(rows) * len(columns)))
        height = 0.8 / len(columns)
        for index, column in enumerate(columns):
            values = [float(valid[(row, column)]["metrics"][metric]) if (row, column) in valid
                      else 0.0 for row in rows]
            # Repeated runs: the bar is their median, the whisker their spread.
            spreads = [valid.get((row, column), {}).get("spread") for row in rows]
            errors = [[value - spread["min"] if spread else 0.0 for value, spread in zip(values, spreads)],
                      [spread["max"] - value if spread else 0.0 for value, spread in zip(values, spreads)]]
            positions = [r + index * height for r in range(len(rows))]
            axes.barh(positions, values, height=height, xerr=errors if any(spreads) else None,
                      label=column_title(column).replace("<br>", ", "))
        axes.set_yticks([r + height * (len(columns) - 1) / 2 for r in range(len(rows))])
        axes.set_yticklabels(rows)
        axes.invert_yaxis()
        axes.set_xlabel(f"{metric.replace('_', ' ')} ({unit}, higher is better)"
                        if not metric.startswith("seconds") else f"{unit} (lower is better)")
        axes.set_title(task)
        axes.legend(fontsize="small", loc="lower right")
        figure.tight_layout()
        path = plot_path(out_dir, task)
        figure.savefig(path, dpi=100)
        plt.close(figure)
        written[task] = path
    return written


def plot_sweep(plt, task, valid, out_dir):
    """Threads on x, milliseconds per mini-batch on a log y, a line per framework (and machine,
    profile and data set, when the records hold several)."""
    groups = sweep_groups(valid)
    figure, axes = plt.subplots(figsize=(7, 4.5))
    all_threads = set()
    for (hardware, profile, data), by_threads in sorted(groups.items(), key=lambda item: tuple(map(str, item[0]))):
        rows = sorted({row for cells in by_threads.values() for row in cells})
        for row in rows:
            points = sorted((threads, 1000 * float(cells[row]["metrics"]["seconds_per_step"]))
                            for threads, cells in by_threads.items() if row in cells and threads)
            all_threads.update(threads for threads, _ in points)
            label = row if len(groups) == 1 else f"{row} ({hardware}, {profile}, {data})"
            axes.plot([t for t, _ in points], [ms for _, ms in points], marker="o", label=label)
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xticks(sorted(all_threads))
    axes.set_xticklabels([str(t) for t in sorted(all_threads)])
    axes.set_xlabel("CPU threads")
    axes.set_ylabel("ms per training mini-batch (lower is better)")
    axes.set_title(f"{task}: time per mini-batch by thread count")
    axes.legend(fontsize="small")
    figure.tight_layout()
    path = plot_path(out_dir, task)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def plot_devices(plt, task, valid, out_dir):
    """A bar per (devices, pipeline) for each framework, images/s with the repeats' spread; one
    panel per machine, profile and data set."""
    groups = sorted(device_groups(valid).items(), key=lambda item: tuple(map(str, item[0])))
    figure, all_axes = plt.subplots(len(groups), 1, squeeze=False,
                                    figsize=(7, sum(1 + 0.9 * len({r for c in g.values() for r in c}) for _, g in groups)))
    for axes, ((hardware, profile, data), by_setting) in zip(all_axes[:, 0], groups):
        rows = sorted({row for cells in by_setting.values() for row in cells})
        height = 0.8 / len(DEVICE_SWEEP)
        for index, setting in enumerate(DEVICE_SWEEP):
            cells = by_setting.get(setting, {})
            values = [float(cells[row]["metrics"]["images_per_second"]) if row in cells else 0.0 for row in rows]
            spreads = [cells.get(row, {}).get("spread") for row in rows]
            errors = [[value - spread["min"] if spread else 0.0 for value, spread in zip(values, spreads)],
                      [spread["max"] - value if spread else 0.0 for value, spread in zip(values, spreads)]]
            devices, pipeline = setting
            label = f"{'1 device' if devices == 1 else 'N devices'}, {'RAM' if pipeline == 'ram' else pipeline}"
            axes.barh([r + index * height for r in range(len(rows))], values, height=height,
                      xerr=errors if any(spreads) else None, label=label)
        axes.set_yticks([r + height * (len(DEVICE_SWEEP) - 1) / 2 for r in range(len(rows))])
        axes.set_yticklabels(rows)
        axes.invert_yaxis()
        axes.set_xlabel("training images/s (higher is better)")
        axes.set_title(f"{task}: {hardware}, {profile}, {data}", fontsize="small")
        axes.legend(fontsize="small", loc="lower right")
    figure.tight_layout()
    path = plot_path(out_dir, task)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
