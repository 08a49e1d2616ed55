"""Makes the repository root importable, so tests can `import common`, and tells the two workers of
`run_all.py --self-test` (pytest-xdist) which tests must run on the same one."""
import json
import os
import sys
from pathlib import Path

import pytest

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
if str(REPOSITORY_ROOT) not in sys.path:
    sys.path.insert(0, str(REPOSITORY_ROOT))

# The modules whose parametrized tests start with a framework (runner.self_test.BY_FRAMEWORK, which
# also sums the suite's cost per framework): one framework's smoke run serves all its notebook tests
# (tests/test_notebooks.py's session fixture, which each worker has its own of), and the frameworks'
# runs across two nodes (tests/test_nodes.py) go to the workers apart.
from runner import self_test  # noqa: E402 (after the root is importable)


# The longest scopes first: run_all.py --self-test hands the scopes to the workers in collection order
# (--no-loadscope-reorder; xdist's own order, most tests first, left the runs across two nodes,
# minutes each in one or two tests, to the end, where one worker ran them while the other idled).
# After the framework runs, the modules of a minute or more (kernels, runs of made-up notebooks),
# so that the suite ends on short ones.
LONGEST_FIRST = ("test_nodes.py", "test_notebooks.py", "test_plain_loops.py", "test_runner.py",
                 "test_broken_copies.py", "test_accelerators.py", "test_home.py", "test_bundle.py",
                 "test_jupyter.py", "test_inference.py")


def pytest_collection_modifyitems(items):
    def rank(item):
        module = item.nodeid.partition("::")[0].rsplit("/", 1)[-1]
        return LONGEST_FIRST.index(module) if module in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each module's tests keep their order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's per-module scheduling (a module's tests share its fixtures and may assume none of its
    own processes run beside them: the runner's Ctrl-C test looks for leftover kernels), with the
    modules above split further by framework, so that two frameworks' smoke runs go side by side."""
    from xdist.scheduler import LoadScopeScheduling

    class ByModuleAndFramework(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            module = nodeid.partition("::")[0]
            _, framework = self_test.group_of(nodeid)
            return f"{module}:{framework}" if framework else module

    return ByModuleAndFramework(config, log)


# Every test's seconds (setup + call + teardown), which the controller receives from both workers,
# written where runner/self_test.py asks (ROSETTA_TEST_DURATIONS) for its summary of the suite's cost.
DURATIONS = {}


def pytest_runtest_logreport(report):
    DURATIONS[report.nodeid] = DURATIONS.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session):
    path = os.environ.get("ROSETTA_TEST_DURATIONS")
    if path and not hasattr(session.config, "workerinput"):  # the controller, not a worker
        Path(path).write_text(json.dumps(DURATIONS))
