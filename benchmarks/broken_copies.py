"""Run the deliberately broken copies (runner/broken_copies.py) and keep what each produced in
results/broken_copies.jsonl: the far side of every bound in the README's margins table.

    python3 benchmarks/broken_copies.py                          # numpy copies, every broken engine and optimiser
    python3 benchmarks/broken_copies.py --engines pytorch,gluon  # numpy copies and those engines
    python3 benchmarks/broken_copies.py --engines none           # the numpy copies only (about 2 minutes; 12 more where
                                                                 # FCN5's quick-run trajectories are not cached)
    python3 benchmarks/broken_copies.py --engines jax_flax --skip-numpy
    python3 benchmarks/broken_copies.py --engines pytorch,jax_flax --notebooks optimisers --skip-numpy

Run it in the runner's environment (python3 run_all.py builds it; its python is printed by
`python3 run_all.py --list`); each broken engine is one MultiGPU smoke run through run_all.py (its
framework's environment is built when missing), each broken optimiser one GPT smoke run. `run_all.py --docs` then regenerates the table.
"""
import argparse
import datetime
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common import probe  # noqa: E402
from runner import broken_copies, margins, report  # noqa: E402

ENGINE_FRAMEWORKS = sorted({framework for framework, _, _ in broken_copies.BROKEN_ENGINES}
                           | {framework for framework, _, _, _ in broken_copies.OPTIMISER_COPIES})


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="all",
                        help=f"comma-separated frameworks whose broken engines run, 'all' or 'none' ({', '.join(ENGINE_FRAMEWORKS)})")
    parser.add_argument("--skip-numpy", action="store_true", help="run the broken notebooks only")
    parser.add_argument("--notebooks", default="engines,optimisers",
                        help="which broken notebooks of the chosen frameworks run: engines (MultiGPU), optimisers (GPT), or both")
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    arguments = parser.parse_args(argv)
    chosen = {"all": ENGINE_FRAMEWORKS, "none": []}.get(arguments.engines, arguments.engines.split(","))
    unknown = [name for name in chosen if name not in ENGINE_FRAMEWORKS]
    if unknown:
        parser.error(f"--engines: no broken engine of {', '.join(unknown)}; valid: {', '.join(ENGINE_FRAMEWORKS)}")
    arguments.engines = chosen
    arguments.notebooks = set(arguments.notebooks.split(","))
    if not arguments.notebooks <= {"engines", "optimisers"}:
        parser.error(f"--notebooks: {arguments.notebooks - {'engines', 'optimisers'}}; valid: engines, optimisers")
    return arguments


def main(argv=None):
    arguments = parse_arguments(sys.argv[1:] if argv is None else argv)
    machine = probe.hardware_label(probe.hardware())
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    entries = []
    copies = []
    if not arguments.skip_numpy:
        print("[broken] numpy copies: training parity, feature parity, FCN5's trajectory")
        copies = broken_copies.numpy_copies()
    for check, copy, error, bound in copies:
        entries.append({"check": check, "copy": copy, "error": error, "bound": bound, "kind": "numpy",
                        "hardware": machine, "started_at": stamp})
        print(f"  {check}: {copy}: {error:.3g} ({error / bound:,.0f}× the bound)")
    # (framework, copy, the check that must catch it, that check's record prefix, threads): the MultiGPU
    # engines on every core, the GPT optimisers on one thread as in the tests.
    notebooks = [(framework, name, *broken_copies.caught_by(name), None) for framework, name, _ in broken_copies.BROKEN_ENGINES
                 if "engines" in arguments.notebooks]
    notebooks += [(framework, name, f"training parity, {task}", "train_parity", 1)
                  for framework, task, name, _ in broken_copies.OPTIMISER_COPIES if "optimisers" in arguments.notebooks]
    failures = 0
    for framework, name, check, prefix, threads in notebooks:
        if framework not in arguments.engines:
            continue
        with tempfile.TemporaryDirectory() as folder:
            record = broken_copies.run_broken_copy(framework, name, Path(folder), threads=threads)
        checks = (record or {}).get("checks", {})
        valid, why = report.validity(record) if record else (True, "no record")
        # A copy caught by its count of copies or of batch slices keeps no error for the margins table
        # (its replicas may agree: every device computed the same whole batch).
        error = checks.get(f"{prefix}_relative_error", checks.get(f"{prefix}_max_abs_error")) if prefix in why else None
        entries.append({"check": check, "copy": f"{framework}: {name}", "error": error,
                        "bound": checks.get(f"{prefix}_tolerance"), "kind": "notebook",
                        "framework": framework, "verdict": why or "valid", "hardware": machine, "started_at": stamp})
        # The replica check also fails a timed loop whose copies or batch slices are too few.
        caught = not valid and (prefix in why or (check == "MultiGPU replicas" and ("replica(s)" in why or "slice(s)" in why)))
        failures += not caught
        print(f"  {framework}: {name}: {why or 'VALID: the broken copy was not caught'}")
    margins.append_broken(arguments.results, entries)
    print(f"[broken] {len(entries)} copies appended to {arguments.results / margins.BROKEN_COPIES_FILE}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
