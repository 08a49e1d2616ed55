"""What MXNet's two plain loops (gluon.py, the Gluon API; mxnet_module.py, the Module API) share:
one engine, its context, its sync and the way data reaches it. Imported after clock.start, which
pins OMP_NUM_THREADS: MXNet has no thread-count call, its OpenMP pool is sized from that variable
at import, as in the notebooks (without it MXNet takes half the cores: one thread on two).
Imported by its package path: clock takes this folder off sys.path, since the loops there are
named after frameworks."""
import mxnet as mx

ctx = mx.cpu()
mx.random.seed(0)


def sync(result):
    mx.nd.waitall()


def on_device(array):
    """`array` wrapped without a copy: a host copy of 200000 elements or more (mx.nd.array's; see
    MXNET_CPU_PARALLEL_SIZE) runs an OpenMP loop on this thread, and that second OpenMP team beside
    the engine's makes every later two-thread step slower (the GRU's by half)."""
    return mx.nd.from_numpy(array, zero_copy=True)
