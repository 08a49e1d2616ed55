"""The peak a CPU column's speeds are held against, so that no share of it exceeds 100 %.

A column's fp32 peak is the larger of
  measured     the best GFLOP/s of a square float32 matrix product over GEMM_SIZES, in numpy's BLAS
               and in each framework's own GEMM present on the machine (runner.peaks runs those),
               on the run's pinned threads;
  theoretical  cores × clock × FLOPs per cycle and core, from what the CPU says of itself: its
               vector width (the flags), its clock (/proc/cpuinfo's MHz, the nominal one: a VM does
               not show turbo) and the FMA units of its generation (FMA_UNITS; two where unknown).
The bf16 peak exists only where the CPU computes bf16 natively (AVX-512 BF16's dot products, AMX's
tiles); a bf16 variant's share is of it. One multiply-add counts as 2 FLOPs, as in common.flops.
"""
import time

import numpy as np

from common import probe

GEMM_SIZES = (1024, 2048, 4096)
GEMM_REPEATS = 3
# fp32 multiply-adds per cycle and core, by what the CPU says: vector lanes × FMA units. AMD's Zen 2
# to Zen 4 (family 23 and 25) run AVX-512 as two 256-bit halves on two 256-bit FMA pipes; Zen 5
# (family 26) and Intel's server cores since Skylake-SP have two 512-bit FMA units.
FMA_UNITS = 2
AMD_HALF_WIDTH_FAMILIES = (23, 25)
# AMX: one TDPBF16PS multiplies a 16×32 by a 32×16 bf16 tile (8,192 multiply-adds) every 16 cycles.
AMX_BF16_MULTIPLY_ADDS_PER_CYCLE = 512


def clock_ghz():
    """The CPU's clock in GHz as /proc/cpuinfo states it, or None."""
    try:
        return float(probe.cpu_info().get("cpu MHz")) / 1000
    except (TypeError, ValueError):
        return None


def theoretical(cores=None, flags=None, vendor=None, family=None, ghz=None):
    """{"fp32": GFLOP/s or None, "bf16": GFLOP/s or None, "fp32_how" and "bf16_how": the formulas
    in words, or why there is none}."""
    info = probe.cpu_info()
    cores = cores or probe.physical_cores()
    flags = set(probe.cpu_flags() if flags is None else flags)
    vendor = vendor or info.get("vendor_id", "")
    family = family if family is not None else probe.cpu_identity()[0]
    ghz = ghz or clock_ghz()
    if not ghz:
        return {"fp32": None, "bf16": None, "fp32_how": "the CPU states no clock", "bf16_how": None}
    if "avx512f" in flags and not (vendor == "AuthenticAMD" and family in AMD_HALF_WIDTH_FAMILIES):
        lanes, width = 16, "512-bit"
    elif "avx2" in flags or "avx512f" in flags:
        lanes, width = 8, "256-bit"
    else:
        return {"fp32": None, "bf16": None, "fp32_how": "no AVX2: no vector width known", "bf16_how": None}
    fp32 = 2 * cores * ghz * lanes * FMA_UNITS
    how = f"{cores} core{'s' if cores != 1 else ''} × {ghz:.2f} GHz × {FMA_UNITS} {width} FMA units × {lanes} lanes × 2"
    bf16, bf16_how = None, "no native bf16 (neither AVX-512 BF16 nor AMX)"
    if "amx_bf16" in flags:
        bf16 = 2 * cores * ghz * AMX_BF16_MULTIPLY_ADDS_PER_CYCLE
        bf16_how = (f"{cores} core{'s' if cores != 1 else ''} × {ghz:.2f} GHz × AMX's "
                    f"{AMX_BF16_MULTIPLY_ADDS_PER_CYCLE} multiply-adds a cycle × 2")
    elif "avx512_bf16" in flags:
        bf16 = 2 * fp32  # VDPBF16PS: a pair of bf16 products per fp32 lane
        bf16_how = how + " × 2 (AVX-512 BF16: two products per fp32 lane)"
    return {"fp32": round(fp32, 1), "bf16": None if bf16 is None else round(bf16, 1),
            "fp32_how": how, "bf16_how": bf16_how}


def best_gflops(product, size, repeats=GEMM_REPEATS):
    """GFLOP/s of the fastest of `repeats` calls of `product()` (one size×size matrix product that
    has finished when it returns), after one call that starts the thread pools."""
    product()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        product()
        best = min(best, time.perf_counter() - start)
    return 2 * size ** 3 / best / 1e9


def numpy_gemms(sizes=GEMM_SIZES):
    """{"fp32": {size: GFLOP/s}} of numpy's BLAS on this process's threads (numpy has no bf16)."""
    rng = np.random.default_rng(0)
    found = {}
    for size in sizes:
        a, b = (rng.standard_normal((size, size), dtype=np.float32) for _ in range(2))
        found[size] = round(best_gflops(lambda: a @ b, size), 1)
    return {"fp32": found}


def combine(measured, theory):
    """The column's peaks from {source: {"fp32"|"bf16": {size: GFLOP/s}}} and theoretical():
    {"fp32": {"gflops", "source"}, "bf16": {...} or None, "measured": ..., "theoretical": ...}."""
    result = {"measured": measured, "theoretical": theory}
    for precision in ("fp32", "bf16"):
        candidates = [(gflops, f"{source} GEMM {size}²") for source, by_precision in measured.items()
                      for size, gflops in (by_precision.get(precision) or {}).items() if gflops]
        if theory.get(precision):
            candidates.append((theory[precision], "theoretical: " + theory[f"{precision}_how"]))
        if precision == "bf16" and not theory.get("bf16"):
            candidates = []  # not native: a bf16 run is emulated, and held to no bf16 peak
        if candidates:
            gflops, source = max(candidates)
            result[precision] = {"gflops": round(gflops, 1), "source": source}
        else:
            result[precision] = None
    return result
