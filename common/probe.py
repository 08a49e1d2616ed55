"""Hardware and version probe: what ran, on what. No deep-learning import here: a notebook passes
what its framework knows (GPU name, CUDA/cuDNN versions) through `accelerator`."""
import os
import platform
import shutil
import subprocess
import sys


def cpu_model():
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_cores():
    """Cores this process may use (the affinity mask, which containers narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


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


def hardware(accelerator=None, threads=None):
    """The record's `hardware` field.

    accelerator: what the framework reports, e.g. {"gpu_name": ..., "gpu_count": ...,
    "cuda": ..., "cudnn": ...}; when None, nvidia-smi is asked. threads: the intra-op threads the
    notebook set or read from its framework.
    """
    info = {"cpu_model": cpu_model(), "cpu_cores": cpu_cores(), "threads": threads,
            "gpu_name": None, "gpu_count": 0}
    if accelerator:
        info.update({key: value for key, value in accelerator.items() if value is not None})
    else:
        gpus = nvidia_smi_gpus()
        if gpus:
            info.update({"gpu_name": gpus[0][0], "gpu_count": len(gpus), "driver": gpus[0][1]})
    return info


def hardware_label(info):
    """Short column label: the GPU when one was used, else the CPU with its cores."""
    if info.get("gpu_count"):
        count = info["gpu_count"]
        return f"{info['gpu_name']}" + (f" ×{count}" if count > 1 else "")
    return f"{info.get('cpu_model', 'CPU')} ({info.get('cpu_cores')} cores)"


def versions(**framework_versions):
    """Python, numpy and the framework versions the notebook passes."""
    import numpy

    found = {"python": platform.python_version(), "numpy": numpy.__version__,
             "platform": platform.platform()}
    found.update({name: str(value) for name, value in framework_versions.items()})
    return found


def interpreter():
    return sys.executable
