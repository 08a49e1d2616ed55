"""`run_all.py --list`: the framework × task matrix, and what of it can run on this machine's
accelerator (a notebook, a build of its environment, that build made already or still to make)."""
from common.params import TASKS
from runner.frameworks import RUNNABLE, UNAVAILABLE, notebook_name


def matrix_rows(notebooks_dir, accelerator="cpu"):
    """(framework title, environment, {task: status text}) for every framework we know."""
    from runner import environments

    rows = []
    for framework in RUNNABLE.values():
        available = environments.has_build(framework.environment, accelerator)
        built = available and environments.is_built(framework.environment, accelerator)
        statuses = {}
        for task in TASKS:
            if not (notebooks_dir / notebook_name(framework, task)).exists():
                statuses[task] = "no notebook"
            elif not available:
                statuses[task] = f"no {accelerator} build"
            else:
                statuses[task] = "ready" if built else "ready (env to build)"
        rows.append((framework.title, framework.environment, statuses))
    for framework in UNAVAILABLE:
        rows.append((framework.title, "—", {task: "unavailable" if task in framework.tasks else "—"
                                             for task in TASKS}))
    return rows


def print_matrix(notebooks_dir, accelerator="auto"):
    from runner import environments
    from runner.arguments import resolve_accelerator

    if accelerator == "auto":
        accelerator = resolve_accelerator("auto")
    print(f"accelerator: {accelerator} (environments from envs/<name>"
          f"{'' if accelerator == 'cpu' else '.' + accelerator}.txt)\n")
    rows = [("framework", "env", {task: task for task in TASKS})] + matrix_rows(notebooks_dir, accelerator)
    title_width = max(len(title) for title, _, _ in rows) + 2
    env_width = max(len(environment) for _, environment, _ in rows) + 2
    widths = {task: max(len(statuses[task]) for _, _, statuses in rows) + 2 for task in TASKS}
    for title, environment, statuses in rows:
        print((title.ljust(title_width) + environment.ljust(env_width)
               + "".join(statuses[task].ljust(widths[task]) for task in TASKS)).rstrip())
    print()
    for framework in UNAVAILABLE:
        print(f"{framework.title}: cannot run here: {framework.reason}")
    if accelerator != "cpu":
        for name, reason in environments.NO_GPU_BUILD.items():
            print(f"environment '{name}': {reason}")
