"""Run every framework's plain loops (benchmarks/loops/) in its environment and print each
notebook's rate against its plain loop's, from the latest records on this machine (issue 11).

    python3 benchmarks/plain_loops.py                      # every loop, quick profile, all cores
    python3 benchmarks/plain_loops.py --frameworks pytorch,gluon --tasks CNN --repeat 3
    python3 benchmarks/plain_loops.py --table              # the ratio table only, nothing run

Each loop run appends one line to results/plain_loops.jsonl; `run_all.py --docs` puts the ratio
table in the README. Run it alone on the machine, as the table runs are.
"""
import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common import probe  # noqa: E402
from runner.frameworks import RUNNABLE  # noqa: E402
from common.params import PROFILES, TASKS  # noqa: E402
from common.records import read_records  # noqa: E402
from runner import environments, plain_loops  # noqa: E402

TIMEOUT_SECONDS = 1200


def names(valid, what):
    def parse(text):
        chosen = [name.strip() for name in text.split(",") if name.strip()]
        unknown = [name for name in chosen if name not in valid]
        if unknown or not chosen:
            raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(unknown) or repr(text)}; valid: {', '.join(valid)}")
        return chosen
    return parse


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frameworks", type=names(list(plain_loops.LOOPS), "framework"))
    parser.add_argument("--tasks", type=names([t for t in TASKS if t not in plain_loops.NO_LOOP_TASKS], "task"))
    parser.add_argument("--profile", choices=PROFILES, default="quick")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads; 0: every core (the default)")
    parser.add_argument("--repeat", type=int, default=1, help="run the whole selection this many times")
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    parser.add_argument("--table", action="store_true", help="print the ratio table only; run nothing")
    parser.add_argument("--use-current-python", action="store_true",
                        help="run every loop in this interpreter instead of the framework's environment")
    arguments = parser.parse_args(argv)
    if arguments.threads < 0 or arguments.repeat < 1:
        parser.error("--threads must be >= 0 and --repeat >= 1")
    return arguments


def run_loop(framework, task, arguments, python, threads):
    command, env = plain_loops.loop_command(framework, task, python, arguments.profile, threads)
    try:
        finished = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {TIMEOUT_SECONDS} s"
    lines = finished.stdout.strip().splitlines()
    if finished.returncode != 0 or not lines:
        tail = (finished.stderr or finished.stdout).strip().splitlines()[-8:]
        return None, f"exit {finished.returncode}: " + " | ".join(tail)
    return json.loads(lines[-1]), None


def run(arguments):
    pairs = plain_loops.planned(arguments.frameworks, arguments.tasks)
    if not pairs:
        print("[loops] nothing selected has a plain loop", file=sys.stderr)
        return 2
    threads = arguments.threads or probe.cpu_cores()
    hardware = dict(probe.hardware(threads=threads), threads_pinned=threads)
    sitting = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S")
    pythons, failures, total = {}, 0, len(pairs) * arguments.repeat
    done = 0
    for repeat in range(1, arguments.repeat + 1):
        for framework, task in pairs:
            done += 1
            environment = RUNNABLE[framework].environment
            if environment not in pythons:
                pythons[environment] = (Path(sys.executable) if arguments.use_current_python else
                                        environments.environment_python(environments.build(environment)))
            started = time.monotonic()
            result, error = run_loop(framework, task, arguments, pythons[environment], threads)
            entry = {"framework": framework, "task": task, "profile": arguments.profile, "sitting": sitting,
                     "repeat": repeat, "hardware": hardware, "environment": environment,
                     "environment_hash": None if arguments.use_current_python else
                     environments.environment_hash(environment),
                     "status": "ok" if result else "failed", "reason": error,
                     "wall_seconds": round(time.monotonic() - started, 1)}
            if result:
                entry.update(items_per_second=result["items_per_second"], unit=result["unit"],
                             steps=result["steps"], seconds=result["seconds"])
                shown = f"{result['items_per_second']:.4g} {result['unit']}/s"
            else:
                failures += 1
                shown = f"FAILED: {error}"
            plain_loops.append(arguments.results, entry)
            print(f"[loops] ({done}/{total}) {framework} {task}: {shown} ({entry['wall_seconds']:.0f} s)", flush=True)
    print_table(arguments)
    if failures:
        print(f"[loops] {failures} loop run(s) failed (see results/{plain_loops.FILE_NAME})", file=sys.stderr)
    return 1 if failures else 0


def print_table(arguments):
    records_path = arguments.results / "records.jsonl"
    records = read_records(records_path) if records_path.exists() else []
    table = plain_loops.markdown(records, plain_loops.read(arguments.results))
    print(table or "[loops] no notebook record and plain loop share a machine, threads and profile yet")


def main(argv=None):
    arguments = parse_arguments(sys.argv[1:] if argv is None else argv)
    if arguments.table:
        print_table(arguments)
        return 0
    return run(arguments)


if __name__ == "__main__":
    sys.exit(main())
