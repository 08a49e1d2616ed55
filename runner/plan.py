"""The plan of a run: which notebooks run, in what order, on how many threads and with which
settings (FCN5's thread sweep, MultiGPU's devices × pipelines), less what --resume finds recorded."""
from typing import NamedTuple

from common.frameworks import precision
from common.params import DEVICE_SWEEP, DEVICE_SWEEP_TASKS, TASKS, THREAD_SWEEP_TASKS
from runner.frameworks import DEFAULT_VARIANT, RUNNABLE, notebook_name, variants
from runner.nodes import launch_block


class PlannedRun(NamedTuple):
    """One notebook run: a framework's notebook for a task, its variant, threads and settings."""
    framework: object  # runner.frameworks' Framework
    task: str
    variant: str
    notebook: object  # Path
    threads: int
    settings: dict


def bf16_not_native(arguments, variant):
    """Why a reduced-precision `variant` is not computed natively on this run's accelerator, or None
    (an fp32 variant, or hardware with native bf16). The runner then skips it, or with
    --emulate-bf16 runs a short emulated run for its checks."""
    from common import probe

    if precision(variant) == "fp32":
        return None
    native, why = probe.bf16_native(arguments.accelerator)
    return None if native else why


def thread_counts(task, arguments, threads, variant=DEFAULT_VARIANT):
    """A THREAD_SWEEP_TASKS task (FCN5) runs at 1, 2, 4, … threads up to the physical cores, each
    in a fresh kernel (most frameworks size their pools at import), unless --threads names one
    count, the notebooks run on a GPU (where the CPU threads only feed it) or the variant is a bf16
    one emulated here (its speed means nothing: one run for its checks); every other task runs on
    `threads`."""
    from common import probe

    emulated = arguments.emulate_bf16 and bf16_not_native(arguments, variant)
    on_gpu = arguments.accelerator == "cuda"
    if task in THREAD_SWEEP_TASKS and not arguments.threads and not emulated and not on_gpu:
        return probe.thread_sweep()
    return [threads]


def settings_for(task, arguments):
    """The notebook parameters a task is swept over besides threads, one dict per run: a
    DEVICE_SWEEP_TASKS task (MultiGPU) runs on 1 and on all devices (devices 0), from RAM and
    from disk, as far as --devices and --pipelines keep them."""
    if task in DEVICE_SWEEP_TASKS:
        wanted = {1 if name == "1" else 0 for name in arguments.devices.split(",")}
        one_node = [{"devices": devices, "pipeline": pipeline} for devices, pipeline in DEVICE_SWEEP
                    if devices in wanted and pipeline in arguments.pipelines] if "1" in arguments.nodes else []
        # Across nodes: every device of each (the processes the launcher starts per node).
        return one_node + [{"devices": 0, "pipeline": pipeline, "nodes": int(count)}
                           for count in arguments.nodes if count != "1" for pipeline in arguments.pipelines]
    return [{}]


def settings_text(settings):
    """'1 device · ram', 'all devices · disk', '2 nodes · all devices · ram'."""
    devices = settings.get("devices")
    shown = [f"{settings['nodes']} nodes"] if settings.get("nodes", 1) > 1 else []
    shown += [] if devices is None else ["1 device" if devices == 1 else ("all devices" if devices == 0 else f"{devices} devices")]
    return " · ".join(shown + [str(value) for key, value in sorted(settings.items()) if key not in ("devices", "nodes")])


def settings_slug(settings):
    return settings_text(settings).replace(" · ", ".").replace(" ", "-")


def plan_runs(arguments, threads, records_path, hardware_label):
    """(every PlannedRun in order, how many --resume skipped as already recorded)."""
    planned = []
    for name in arguments.frameworks:
        framework = RUNNABLE[name]
        for task in arguments.tasks:
            notebook = arguments.notebooks_dir / notebook_name(framework, task)
            if notebook.exists():
                chosen = tuple(variant for variant in variants(framework, task) if variant in arguments.variants)
                swept = settings_for(task, arguments)
                if any(settings.get("nodes", 1) > 1 for settings in swept) and launch_block(notebook) is None:
                    print(f"[run] {framework.title} {task}: its closing section prints no multi-node command "
                          "that runs as it stands, so no run across nodes")
                    swept = [settings for settings in swept if settings.get("nodes", 1) == 1]
                planned.extend(PlannedRun(framework, task, variant, notebook, count, settings)
                               for variant in chosen for count in thread_counts(task, arguments, threads, variant)
                               for settings in swept)
            elif len(arguments.tasks) < len(TASKS) or task in framework.tasks:
                print(f"[run] {framework.title} {task}: no notebook {notebook.name}, skipped")
    if not arguments.resume:
        return planned, 0
    kept = without_recorded(planned, arguments, records_path, hardware_label)
    if len(kept) < len(planned):
        print(f"[run] --resume: {len(planned) - len(kept)} already recorded, skipped")
    return kept, len(planned) - len(kept)


def resume_key(framework_name, task, variant, threads, settings):
    # A sweep's runs count apart, one per thread count or device setting.
    return (framework_name, task, variant, threads if task in THREAD_SWEEP_TASKS else None,
            tuple(sorted((settings or {}).items())))


def without_recorded(planned, arguments, records_path, hardware_label):
    """--resume: the planned runs that have no ok record yet for this hardware, profile and data."""
    from common import records
    from common.probe import hardware_label as label_of

    done = {resume_key(r["framework"], r["task"], r.get("variant", DEFAULT_VARIANT),
                       r.get("hardware", {}).get("threads_pinned"), r.get("settings"))
            for r in records.read_records(records_path)
            if r.get("status") == "ok" and r.get("profile") == arguments.profile
            and r.get("data_choice") == arguments.data
            and label_of(r.get("hardware", {})) == hardware_label}
    return [run for run in planned
            if resume_key(run.framework.name, run.task, run.variant, run.threads, run.settings) not in done]
