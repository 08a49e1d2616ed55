"""The cores of this pytest-xdist worker, for the tests that start framework processes (smoke runs of
the notebooks, the plain loops): the machine's cores split evenly between the workers (all of them
outside xdist, or where there are fewer cores than workers). Two workers whose processes each spread
their threads over every core slow each other down far more than twice: PyTorch's OpenMP threads
wait on each other at every operator (its smoke GRU trained 32 sequences/s beside the other worker's
notebooks, against about 700 alone)."""
import os

from common import probe


def worker_cores():
    usable = sorted(os.sched_getaffinity(0))
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    if workers < 2 or len(usable) < workers:
        return usable
    share = len(usable) // workers
    return usable[index * share:(index + 1) * share]


CORES = worker_cores()
# The threads of the processes started on them: the physical cores among the worker's own.
THREADS = max(1, probe.physical_cores() * len(CORES) // len(os.sched_getaffinity(0)))


def pin(cores=CORES):
    """A preexec_fn for subprocess: the child runs on `cores` only (None where all may be used)."""
    if cores is None or set(cores) == os.sched_getaffinity(0):
        return None
    return lambda: os.sched_setaffinity(0, cores)
