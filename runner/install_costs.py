"""What each framework environment costs a user: build seconds, size on disk and cold import time,
measured by the runner when it builds (or first uses) an environment, kept in
results/install_costs.json (one entry per environment and accelerator, replaced when its
requirements change) and shown as a README table and in the reader's column heads."""
import json
from pathlib import Path

from runner import environments
from runner.frameworks import RUNNABLE

FILE_NAME = "install_costs.json"


def read(results):
    path = Path(results) / FILE_NAME
    return json.loads(path.read_text()) if path.exists() else {}


def key(environment, accelerator="cpu"):
    return f"{environment} ({accelerator})"


def note(results, environment, accelerator, hardware_label, remeasure=False):
    """Measure a built environment (once, unless `remeasure`: the figures stay in its marker) and
    keep the entry."""
    cost = environments.install_cost(environment, accelerator, remeasure)
    if cost is None:
        return None
    costs = read(results)
    entry = dict(cost, requirements=environments.requirements_file(environment, accelerator).name,
                 environment_hash=environments.environment_hash(environment, accelerator),
                 machine=hardware_label)
    if costs.get(key(environment, accelerator)) != entry:
        costs[key(environment, accelerator)] = entry
        path = Path(results) / FILE_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(costs, indent=1, sort_keys=True) + "\n")
    return entry


def size_text(megabytes):
    return f"{megabytes / 1000:.2f} GB" if megabytes >= 1000 else f"{megabytes:.0f} MB"


def markdown(costs):
    if not costs:
        return ""
    lines = ["### What each environment costs to install",
             "",
             "Measured by the runner on the machine named: build, the seconds pip took to make the "
             "virtual environment from the package registries (downloads included, pip's cache as that "
             "machine had it; Debian packages such as R's are not counted); size on disk of the virtual "
             "environment; cold import, the median of three fresh interpreters importing the framework, "
             "less an empty interpreter's start.",
             "",
             "| environment | frameworks | requirements | build | size on disk | cold import | machine |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name in sorted(costs):
        cost = costs[name]
        environment = name.split(" (")[0]
        users = ", ".join(f.title for f in RUNNABLE.values() if f.environment == environment) or "the runner"
        build = f"{cost['build_seconds']:.0f} s" if cost.get("build_seconds") is not None else "—"
        imported = f"{cost['import_seconds']:.1f} s" if cost.get("import_seconds") is not None else "—"
        lines.append(f"| {name} | {users} | `envs/{cost['requirements']}` | {build} | "
                     f"{size_text(cost['size_mb'])} | {imported} | {cost.get('machine', '')} |")
    return "\n".join(lines)
