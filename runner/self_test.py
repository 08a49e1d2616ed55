"""run_all.py --self-test: the test suite on two pytest-xdist workers, with the frameworks'
environments built in the background from the start, and its cost printed at the end (wall time,
CPU time, the slowest tests, the time per module and per framework) and written to
docs/test-costs.md when the whole suite ran."""
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common.paths import REPOSITORY_ROOT

# The pid of the process that builds the framework environments behind the tests.
BUILDER_VARIABLE = "ROSETTA_SELF_TEST_BUILDER"
# When the command began (seconds since the epoch), kept through the re-execution in the runner's
# environment, so that the wall time includes that environment's build.
STARTED_VARIABLE = "ROSETTA_SELF_TEST_STARTED"
# Where tests/conftest.py writes every test's duration (seconds, setup + call + teardown).
DURATIONS_VARIABLE = "ROSETTA_TEST_DURATIONS"
# What the cache held when the command began: "warm" (every environment built), or what was missing.
CACHE_VARIABLE = "ROSETTA_SELF_TEST_CACHE"
COSTS_PAGE = REPOSITORY_ROOT / "docs" / "test-costs.md"
SLOWEST = 20
# Modules whose tests are parametrized by framework first (tests/conftest.py's SPLIT_BY_FRAMEWORK).
BY_FRAMEWORK = ("test_notebooks.py", "test_plain_loops.py", "test_nodes.py")


def start_builds():
    """Start building the frameworks' environments one after another, in the order the tests need
    them, so that a test worker reaching a framework finds it built: a build from nothing is mostly
    downloads and disk, and a worker waiting on its own leaves its core idle. Called before the
    runner's own environment is built, beside it; its pid."""
    from runner import environments
    from runner.frameworks import RUNNABLE

    if BUILDER_VARIABLE in os.environ:
        return
    os.environ[STARTED_VARIABLE] = str(time.time())
    names = list(dict.fromkeys(framework.environment for framework in RUNNABLE.values()))
    missing = [name for name in ["runner", *names] if not environments.is_built(name)]
    os.environ[CACHE_VARIABLE] = ("warm cache" if not missing else "from nothing" if len(missing) == len(names) + 1
                                  else f"{len(missing)} of {len(names) + 1} environments to build")
    os.environ[BUILDER_VARIABLE] = str(environments.build_in_background(
        names, environments.cache_root() / "envs" / "self-test-builds.log").pid)


def stop_builds(pid):
    """Stop the builds if the tests ended first (an unfinished build is redone next time)."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass  # done already
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def run(pytest_arguments=()):
    """The suite, on two workers (tests/conftest.py groups the tests): most of it is kernels
    starting, imports and compilers, which leave the second of two cores idle. Its exit status."""
    from runner import peaks

    workers = str(min(2, os.cpu_count() or 1))
    builder = int(os.environ.pop(BUILDER_VARIABLE))  # not handed down to the tests
    started = float(os.environ.pop(STARTED_VARIABLE, time.time()))
    cache = os.environ.pop(CACHE_VARIABLE, "")
    with tempfile.TemporaryDirectory() as folder:
        durations_path = Path(folder) / "durations.json"
        try:
            status = subprocess.call(
                [sys.executable, "-m", "pytest", "-q", "-n", workers, "--dist", "loadscope", "--no-loadscope-reorder",
                 str(REPOSITORY_ROOT / "tests"), *pytest_arguments],
                cwd=REPOSITORY_ROOT, env=dict(os.environ, **{DURATIONS_VARIABLE: str(durations_path),
                                                             peaks.SHARED_VARIABLE: str(Path(folder) / "peaks")}))
        finally:
            stop_builds(builder)
        wall = time.time() - started
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = usage.ru_utime + usage.ru_stime
        durations = json.loads(durations_path.read_text()) if durations_path.exists() else {}
    costs = summary(durations, wall, cpu, cache)
    print("\n" + costs)
    if durations and not pytest_arguments and status == 0:
        COSTS_PAGE.write_text(page(costs))
        print(f"(written to {COSTS_PAGE.relative_to(REPOSITORY_ROOT)})")
    return status


def group_of(nodeid):
    """(module, framework or None) of a test id, e.g. ("test_notebooks.py", "jax_flax")."""
    module, _, test = nodeid.partition("::")
    module = module.rsplit("/", 1)[-1]
    framework = None
    if module in BY_FRAMEWORK and "[" in test:
        framework = test.split("[", 1)[1].split("-", 1)[0].rstrip("]")
    return module, framework


def minutes(seconds):
    return f"{int(seconds // 60)} min {seconds % 60:02.0f} s"


def summary(durations, wall, cpu, cache=""):
    """The suite's cost in Markdown: wall and CPU time, the slowest tests, the time per module and
    per framework (test time summed over both workers: a session fixture's runs count in the first
    test that asks for them)."""
    from common import probe

    cores = probe.cpu_cores()
    lines = [f"Test suite: {minutes(wall)} wall, {cpu:,.0f} CPU-seconds "
             f"({100 * cpu / wall if wall else 0:.0f} % of one core; {cores} cores here), "
             f"{len(durations)} tests, {cache or 'cache state unknown'}, on {probe.hardware_label(probe.hardware())}.", ""]
    if not durations:
        return "\n".join(lines)
    lines += [f"The {SLOWEST} slowest tests (seconds, setup + call + teardown):", "", "| seconds | test |", "| ---: | --- |"]
    for nodeid, seconds in sorted(durations.items(), key=lambda item: -item[1])[:SLOWEST]:
        lines.append(f"| {seconds:.0f} | `{nodeid}` |")
    modules, frameworks = {}, {}
    for nodeid, seconds in durations.items():
        module, framework = group_of(nodeid)
        modules[module] = modules.get(module, 0) + seconds
        if framework:
            frameworks[framework] = frameworks.get(framework, 0) + seconds
    lines += ["", "Per module, and per framework in " + ", ".join(BY_FRAMEWORK) + " (seconds summed over the workers):", "",
              "| seconds | module or framework |", "| ---: | --- |"]
    lines += [f"| {seconds:.0f} | {module} |" for module, seconds in sorted(modules.items(), key=lambda item: -item[1])]
    lines += [f"| {seconds:.0f} | {framework} (framework) |"
              for framework, seconds in sorted(frameworks.items(), key=lambda item: -item[1])]
    return "\n".join(lines)


def page(costs):
    return ("# What the tests cost\n\n[README](../README.md) · [running it](running.md)\n\n"
            "Generated by `python3 run_all.py --self-test` at the end of a whole, passing suite (do not edit): "
            "the last such run's machine and cache state are those it names. A new test shows its cost here; "
            "[running it](running.md) gives the time from nothing and with a warm cache per CPU kind.\n\n"
            + costs + "\n")
