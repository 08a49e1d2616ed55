"""The machine's peak on a thread count, for the record (common.peak says what it is): numpy's GEMMs
here, and each selected framework's own GEMM in its environment, each in a fresh interpreter whose
threads are pinned before anything is imported."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A folder where runs share the peaks they measured (set by run_all.py --self-test for its tests,
# which start the runner some 80 times on one machine: at the quick profile each start measured
# 4096² products for 10 s before its first notebook). Unset, every run measures its own.
SHARED_VARIABLE = "ROSETTA_SHARED_PEAKS"

# product(size, bf16): a callable that computes one size×size matrix product and returns when it
# has finished, or None where the framework has no such product. Tried in every environment, each
# where its module imports.
GEMMS = {
    "torch": """
import torch
torch.set_num_threads(threads)
def product(size, bf16):
    a, b = (torch.randn(size, size, dtype=torch.bfloat16 if bf16 else torch.float32) for _ in range(2))
    return lambda: torch.mm(a, b)
""",
    "tensorflow": """
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(threads)
tf.config.threading.set_inter_op_parallelism_threads(threads)
def product(size, bf16):
    a, b = (tf.random.normal((size, size), dtype=tf.bfloat16 if bf16 else tf.float32) for _ in range(2))
    return lambda: tf.linalg.matmul(a, b)  # eager on the CPU: done when it returns
""",
    "jax": """
import jax, jax.numpy as jnp
def product(size, bf16):
    a, b = (jnp.ones((size, size), jnp.bfloat16 if bf16 else jnp.float32) for _ in range(2))
    dot = jax.jit(jnp.dot)
    return lambda: dot(a, b).block_until_ready()
""",
    "mxnet": """
import numpy as np
np.bool = bool
import mxnet as mx
def product(size, bf16):
    if bf16:
        return None
    a, b = (mx.nd.random.normal(shape=(size, size)) for _ in range(2))
    return lambda: mx.nd.dot(a, b).wait_to_read()
""",
    "paddle": """
import paddle
paddle.set_device("cpu")
def product(size, bf16):
    if bf16:
        return None
    a, b = (paddle.randn([size, size]) for _ in range(2))
    return lambda: paddle.matmul(a, b)
""",
}

DRIVER = """
import importlib.util, json, sys
from common import probe
threads = probe.pin_threads(int(sys.argv[1]))  # before numpy: BLAS sizes its pool when it loads
from common import peak
bf16 = sys.argv[2] == "1"
sizes = [int(size) for size in sys.argv[4].split(",")]
found = {}
numpy_only = sys.argv[3] == "numpy"
if numpy_only:
    found["numpy"] = peak.numpy_gemms(sizes)
for name, code in {} if numpy_only else GEMMS.items():
    if importlib.util.find_spec(name.split(".")[0]) is None:
        continue
    try:
        scope = {"threads": threads}
        exec(code, scope)
        by_precision = {}
        for precision in ("fp32", "bf16") if bf16 else ("fp32",):
            by_size = {}
            for size in sizes:
                product = scope["product"](size, precision == "bf16")
                if product is not None:
                    by_size[size] = round(peak.best_gflops(product, size), 1)
            by_precision[precision] = by_size
        found[name] = by_precision
    except Exception as error:  # a framework that cannot run its GEMM here is left out, said why
        print(f"[gemm] {name}: {type(error).__name__}: {error}", file=sys.stderr)
print(json.dumps(found))
"""


def measure(python, threads, numpy_only, bf16, sizes):
    """{source: {"fp32"|"bf16": {size: GFLOP/s}}} measured by `python` on `threads` threads: numpy's
    GEMMs, or the frameworks' importable there."""
    code = f"GEMMS = {GEMMS!r}\n" + DRIVER
    result = subprocess.run([str(python), "-c", code, str(threads), "1" if bf16 else "0",
                             "numpy" if numpy_only else "-", ",".join(map(str, sizes))],
                            capture_output=True, text=True, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=900)
    try:
        found = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        print(f"[run] GEMMs not measured by {python}: {result.stderr.strip()[-300:]}")
        return {}
    for line in result.stderr.splitlines():  # the frameworks' own warnings are left out
        if line.startswith("[gemm] "):
            print(f"[run] GEMM not measured in {Path(python).parent.parent.name}: {line[7:][:300]}")
    return {source: {precision: {int(size): value for size, value in by_size.items()}
                     for precision, by_size in by_precision.items()}
            for source, by_precision in found.items()}


def machine_peak(threads, framework_pythons=(), sizes=None):
    """common.peak.combine of numpy's GEMMs, each framework environment's own (`framework_pythons`:
    their interpreters; a framework found in several keeps its best) and the theoretical peak."""
    from common import peak, probe

    sizes = sizes or peak.GEMM_SIZES
    theory = peak.theoretical(cores=min(threads, probe.physical_cores()))
    measured = measure(sys.executable, threads, True, False, sizes)
    for python in framework_pythons:
        for source, by_precision in measure(python, threads, False, bool(theory.get("bf16")), sizes).items():
            for precision, by_size in by_precision.items():
                kept = measured.setdefault(source, {}).setdefault(precision, {})
                for size, gflops in by_size.items():
                    kept[size] = max(gflops, kept.get(size, 0))
    return peak.combine(measured, theory)


def shared_machine_peak(threads, framework_pythons=(), sizes=None):
    """machine_peak, measured once per thread count, interpreters and sizes among the runs that
    share SHARED_VARIABLE's folder; machine_peak itself where it is unset."""
    folder = os.environ.get(SHARED_VARIABLE)
    if not folder:
        return machine_peak(threads, framework_pythons, sizes)
    key = json.dumps([threads, [str(python) for python in framework_pythons], list(sizes or ())])
    path = Path(folder) / f"peak-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
    if path.exists():
        return json.loads(path.read_text())
    from common.paths import write_whole

    found = machine_peak(threads, framework_pythons, sizes)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, json.dumps(found))  # two runs measuring at once: either's is kept whole
    return json.loads(path.read_text())
