"""Hardware and version probe: what ran, on what. No deep-learning import here: the GPU is described
by nvidia-smi, the framework versions are read from the modules the notebook has imported."""
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path


def cpu_info():
    """The first processor's fields in /proc/cpuinfo ({} where there is none): its model name,
    family and model numbers, and feature flags (x86 `flags`, Arm `Features`)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def cpu_model():
    return cpu_info().get("model name") or platform.processor() or platform.machine()


def cpu_identity():
    """(family, model) numbers of the CPU (x86), or None for each it cannot say: two CPUs of one
    marketing name can be generations apart."""
    fields = cpu_info()
    return tuple(int(fields[key]) if fields.get(key, "").isdigit() else None
                 for key in ("cpu family", "model"))


# The vector and matrix extensions that decide how fast a CPU runs fp32 and bf16 kernels.
VECTOR_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "sve", "bf16")


def cpu_features():
    return [flag for flag in VECTOR_FLAGS if flag in cpu_flags()]


# The cores the process could use before pin_threads narrowed them: the machine the record is of.
MACHINE_CORES_VARIABLE = "ROSETTA_MACHINE_CORES"


def cpu_cores():
    """Cores this process may use (the affinity mask, which containers narrow); once pin_threads
    has narrowed it to fewer threads, the count before, which is what names the machine."""
    if os.environ.get(MACHINE_CORES_VARIABLE):
        return int(os.environ[MACHINE_CORES_VARIABLE])
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def physical_cores():
    """Physical cores among those this process may use (hyper-threads of one core count once), from
    the kernel's topology files; the usable count where those are missing."""
    usable = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    cores = set()
    for cpu in usable:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add(((topology / "physical_package_id").read_text().strip(),
                       (topology / "core_id").read_text().strip()))
        except OSError:
            return len(usable)
    return len(cores) or len(usable)


def thread_sweep(cores=None):
    """1, 2, 4, … up to the physical cores, and the core count itself when it is no power of two."""
    cores = cores or physical_cores()
    counts, count = [], 1
    while count < cores:
        counts.append(count)
        count *= 2
    return counts + [cores]


# What pins a framework's CPU threads before it is imported (most size their pools at import):
# OpenMP (MXNet, PaddlePaddle, oneDNN, Theano), the BLAS libraries (numpy, Chainer), TensorFlow's
# two pools and PaddlePaddle's math library (1 thread unless told). XLA's CPU client (JAX) has no
# such setting: it sizes its pool from the cores the process may use, which pin_threads narrows.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "FLAGS_paddle_num_threads")


def pin_threads(threads=0):
    """Set every thread variable to `threads` (0: the cores this process may use) and return it.
    Call it before importing the framework; the notebook then also sets the framework's own API
    where it has one and records what the framework reports back."""
    if int(threads) < 0:
        raise ValueError(f"threads must be >= 0 (0: all cores), got {threads}")
    threads = int(threads) or cpu_cores()
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    # Fewer threads than cores: the process may then use only that many cores (Linux CPU affinity),
    # which bounds the frameworks that take no thread count (XLA, measured using 2 cores when
    # told 1 through XLA_FLAGS) and every pool a framework starts on its own.
    if hasattr(os, "sched_setaffinity"):
        usable = sorted(os.sched_getaffinity(0))
        if threads < len(usable):
            os.environ.setdefault(MACHINE_CORES_VARIABLE, str(len(usable)))
            os.sched_setaffinity(0, usable[:threads])
    return threads


def thread_settings():
    """The thread variables as this process sees them, for the record."""
    names = THREAD_VARIABLES + ("XLA_FLAGS",)
    settings = {name: os.environ[name] for name in names if name in os.environ}
    # The cores the process may use now.
    settings["cpu_affinity"] = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cpu_cores()
    return settings


def nvidia_smi_gpus():
    """[(name, driver)] from nvidia-smi, or [] when there is none."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=20, check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return []
    return [tuple(part.strip() for part in line.split(",", 1)) for line in out.splitlines() if line]


def nvidia_compute_capability():
    """The first GPU's compute capability as (major, minor), or None when nvidia-smi cannot say
    (no GPU, or a driver older than the `compute_cap` query)."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
        major, minor = out.split()[0].split(".")
        return int(major), int(minor)
    except (subprocess.SubprocessError, OSError, ValueError, IndexError):
        return None


def cpu_flags():
    """The CPU's feature flags (x86 `flags`, Arm `Features`)."""
    fields = cpu_info()
    return set((fields.get("flags") or fields.get("Features") or "").split())


# CPU flags of native bfloat16 arithmetic: AVX-512 BF16, AMX, and Arm's BF16 extension.
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")


def bf16_native(accelerator):
    """(True, '') when `accelerator` ('cpu' or 'cuda') computes bfloat16 natively, else (False,
    why): elsewhere a bf16 variant times a software emulation, not the hardware."""
    if accelerator == "cuda":
        capability = nvidia_compute_capability()
        if capability is not None and capability < (8, 0):
            return False, f"bf16 not native on this GPU (compute capability {capability[0]}.{capability[1]} < 8.0)"
        return True, ""
    if not cpu_flags() & set(BF16_CPU_FLAGS):
        return False, "bf16 not native on this CPU (no AVX512_BF16, AMX or Arm BF16)"
    return True, ""


DEVICES = ("auto", "cpu", "cuda")


def nvidia_accelerator():
    """What nvidia-smi says of the GPUs this process may use (CUDA_VISIBLE_DEVICES narrows them), in
    the record's terms, or None without one."""
    gpus = nvidia_smi_gpus()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        gpus = gpus[:len([index for index in visible.split(",") if index.strip()])]
    if not gpus:
        return None
    return {"gpu_name": gpus[0][0], "gpu_count": len(gpus), "driver": gpus[0][1]}


def use_gpu(device, gpu_found, framework):
    """Whether a notebook runs on the GPU. `device` is the notebook's parameter: 'auto' takes the GPU
    when the framework sees one, 'cpu' never does, 'cuda' always does: when the framework sees no
    GPU (a CPU-only build, or no driver) it stops with a clear message, never falling back to the
    CPU, so a GPU column can never hold a CPU figure."""
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; valid: {', '.join(DEVICES)}")
    if device == "cuda" and not gpu_found:
        raise RuntimeError(
            f"device='cuda', but {framework} sees no GPU: this environment has a CPU-only build, or "
            "the NVIDIA driver is missing. On a GPU host, `python3 run_all.py --accelerator cuda` "
            "builds the framework's CUDA environment (envs/<name>.cuda.txt).")
    return device == "cuda" or (device == "auto" and bool(gpu_found))


def hardware(accelerator=None, threads=None):
    """The record's `hardware` field.

    accelerator: what the framework reports of the GPU it ran on, e.g. {"gpu_name": ...,
    "gpu_count": ..., "cuda": ..., "cudnn": ...}, or None for a run on the CPU, which then records
    no GPU even on a host that has one. The driver version comes from nvidia-smi when the framework
    does not say. threads: the intra-op threads the notebook set or read from its framework.
    """
    family, model = cpu_identity()
    info = {"cpu_model": cpu_model(), "cpu_family": family, "cpu_model_number": model,
            "cpu_flags": cpu_features(), "cpu_cores": cpu_cores(), "threads": threads,
            "thread_settings": thread_settings(),
            "gpu_name": None, "gpu_count": 0}
    if accelerator:
        info.update({key: value for key, value in accelerator.items() if value is not None})
        if info.get("gpu_count") and not info.get("driver"):
            found = nvidia_smi_gpus()
            if found:
                info["driver"] = found[0][1]
    return info


def hardware_label(info):
    """Short column label: the GPU when one was used, else the CPU with its generation, its widest
    vector extension and its cores, so that two machines never share a column. (Records from
    before the probe read the flags keep their shorter label.)"""
    if info.get("gpu_count"):
        count = info["gpu_count"]
        return f"{info['gpu_name']}" + (f" ×{count}" if count > 1 else "")
    parts = []
    if info.get("cpu_family") is not None:
        parts.append(f"family {info['cpu_family']} model {info.get('cpu_model_number')}")
    if "cpu_flags" in info:
        parts.append(vector_class(info["cpu_flags"]))
    parts.append(f"{info.get('cpu_cores')} cores")
    return f"{info.get('cpu_model', 'CPU')} ({', '.join(parts)})"


def vector_class(flags):
    flags = set(flags)
    for flag, name in (("amx_tile", "AMX"), ("avx512_bf16", "AVX-512 BF16"), ("avx512f", "AVX-512"),
                       ("avx2", "AVX2"), ("sve", "SVE"), ("bf16", "Arm BF16")):
        if flag in flags:
            return name
    return "no AVX2"


# The deep-learning packages a record names when the notebook has loaded them (the import name).
FRAMEWORK_MODULES = ("torch", "tensorflow", "keras", "jax", "jaxlib", "flax", "optax", "mxnet", "chainer",
                     "cupy", "paddle", "theano", "lasagne", "onnxruntime", "onnx")


def versions(**extra):
    """Python, numpy, the version of every package of FRAMEWORK_MODULES this process has imported
    (read from sys.modules: nothing is imported here), and `extra`."""
    import numpy

    found = {"python": platform.python_version(), "numpy": numpy.__version__,
             "platform": platform.platform()}
    for name in FRAMEWORK_MODULES:
        version = getattr(sys.modules.get(name), "__version__", None)
        if version is not None:
            found[name] = str(version)
    found.update({name: str(value) for name, value in extra.items()})
    return found
