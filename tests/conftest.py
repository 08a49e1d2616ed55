"""Makes the repository root importable, so tests can `import common`, and groups the tests for
the two workers of `run_all.py --self-test` (pytest-xdist, --dist loadgroup)."""
import sys
from pathlib import Path

import pytest

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
if str(REPOSITORY_ROOT) not in sys.path:
    sys.path.insert(0, str(REPOSITORY_ROOT))


def pytest_collection_modifyitems(items):
    """One group per test module, and per framework where a module's tests take one: a module's
    tests share its fixtures and may assume none of its own processes run beside them (the
    runner's Ctrl-C test looks for leftover kernels), and one framework's smoke run serves all of
    its notebook tests (tests/test_notebooks.py's session fixture, which each worker has its own of)."""
    for item in items:
        group = item.module.__name__
        framework = getattr(item, "callspec", None) and item.callspec.params.get("framework")
        if framework:
            group += f":{framework}"
        item.add_marker(pytest.mark.xdist_group(group))
