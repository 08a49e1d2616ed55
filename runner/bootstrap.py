"""The runner's own environment: run_all.py starts on any Python 3.11 and re-executes itself inside
the runner's virtual environment (envs/runner.txt: papermill, tqdm, numpy, …), building it in the
cache the first time."""
import os
import sys
from pathlib import Path

from common.paths import REPOSITORY_ROOT

RUNNER_ENVIRONMENT = "runner"
BOOTSTRAPPED_VARIABLE = "ROSETTA_RUNNER"


def in_runner_environment():
    try:
        import papermill  # noqa: F401
        import tqdm  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


def ensure_runner_environment(arguments, script):
    """Re-execute `script` (run_all.py) with this process's arguments inside the runner's
    environment, building it when missing; return at once when already there (or when
    --use-current-python says to stay on this interpreter)."""
    if os.environ.get(BOOTSTRAPPED_VARIABLE) or arguments.use_current_python:
        if not in_runner_environment():
            sys.exit("this interpreter lacks papermill/tqdm/numpy: "
                     f"pip install -r {REPOSITORY_ROOT / 'envs' / 'runner.txt'}")
        return
    from runner import environments

    try:
        path = environments.build(RUNNER_ENVIRONMENT)
    except RuntimeError as error:
        sys.exit(str(error))
    python = environments.environment_python(path)
    env = dict(os.environ, **{BOOTSTRAPPED_VARIABLE: "1"}, **environments.bytecode_variables(python))
    env["PYTHONPATH"] = str(REPOSITORY_ROOT)
    os.execve(str(python), [str(python), str(Path(script).resolve())] + sys.argv[1:], env)


def redirect_runner_home():
    """Point what the runner's own process writes under `~` (matplotlib's font cache) into the
    cache, for this process and the tests it starts."""
    from runner import environments

    for variable, value in environments.runner_redirects().items():
        os.environ.setdefault(variable, value)
        Path(value).mkdir(parents=True, exist_ok=True)
