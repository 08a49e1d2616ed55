"""The peak a CPU column's speeds are held against, so that no share of it exceeds 100 %.

A column's fp32 peak is the larger of
  measured     the best GFLOP/s of a square float32 matrix product over GEMM_SIZES, in numpy's BLAS
               and in each framework's own GEMM present on the machine (runner.peaks runs those),
               on the run's pinned threads;
  theoretical  cores × clock × FLOPs per cycle and core: the FMA datapath the core executes, from
               a table keyed by vendor, family and model with the manual that says so
               (AMD_DATAPATHS, INTEL_DATAPATHS; none where the table does not know the core), and
               its clock (/proc/cpuinfo's MHz, the nominal one: a VM does not show turbo).
The bf16 peak exists only where the CPU computes bf16 natively (AVX-512 BF16's dot products, AMX's
tiles); a bf16 variant's share is of it. One multiply-add counts as 2 FLOPs, as in common.flops.
"""
import re
import time

import numpy as np

from common import probe

GEMM_SIZES = (1024, 2048, 4096)
GEMM_REPEATS = 3
# AMX: one TDPBF16PS multiplies a 16×32 by a 32×16 bf16 tile (8,192 multiply-adds) every 16 cycles.
AMX_BF16_MULTIPLY_ADDS_PER_CYCLE = 512

AMD_FAMILY_17H = "AMD, Software Optimization Guide for AMD Family 17h Processors (pub. 55723), §2.11"
AMD_FAMILY_17H_30H = "AMD, Software Optimization Guide for AMD Family 17h Models 30h and Greater (pub. 56305), §2.11"
AMD_FAMILY_19H = "AMD, Software Optimization Guide for AMD Family 19h Processors (pub. 56665), §2.11"
AMD_ZEN4 = "AMD, Software Optimization Guide for the AMD Zen4 Microarchitecture (pub. 57647), §2.11"
AMD_ZEN5 = "AMD, Software Optimization Guide for the AMD Zen5 Microarchitecture (pub. 58455), §2.11"
INTEL_MANUAL = "Intel 64 and IA-32 Architectures Optimization Reference Manual, vol. 1"
INTEL_ARK = INTEL_MANUAL + ", and the SKU's 'Number of AVX-512 FMA Units' (Intel ARK)"


class Datapath:
    """How many FMA pipes a core has and how wide each is: what its fp32 multiply-adds per cycle are."""

    def __init__(self, name, units, bits, source):
        self.name, self.units, self.bits, self.source = name, units, bits, source

    @property
    def lanes(self):
        return self.bits // 32


# The fp32 FMA datapath of a core, keyed by vendor, family and a range of model numbers (x86's CPUID
# as /proc/cpuinfo states it), with the vendor's manual that says so. Zen and Zen+ split each 256-bit
# AVX2 instruction over two 128-bit FMA pipes; Zen 2 to Zen 4 have two 256-bit FMA pipes (Zen 4 runs
# AVX-512 as two halves on them); Zen 5's server and desktop parts two 512-bit ones. Intel's cores
# since Haswell have two 256-bit FMA units, its AVX-512 server cores one or two 512-bit ones (by SKU
# on Skylake-SP and Cascade Lake, where the model name tells; two from Ice Lake-SP on).
AMD_DATAPATHS = (
    (23, range(0x00, 0x30), Datapath("Zen / Zen+", 2, 128, AMD_FAMILY_17H)),
    (23, range(0x30, 0xB0), Datapath("Zen 2", 2, 256, AMD_FAMILY_17H_30H)),
    (25, range(0x00, 0x10), Datapath("Zen 3", 2, 256, AMD_FAMILY_19H)),
    (25, range(0x20, 0x60), Datapath("Zen 3", 2, 256, AMD_FAMILY_19H)),
    (25, range(0x10, 0x20), Datapath("Zen 4", 2, 256, AMD_ZEN4)),
    (25, range(0x60, 0x80), Datapath("Zen 4", 2, 256, AMD_ZEN4)),
    (25, range(0xA0, 0xB0), Datapath("Zen 4c", 2, 256, AMD_ZEN4)),
    (26, range(0x00, 0x20), Datapath("Zen 5 (server)", 2, 512, AMD_ZEN5)),
    (26, range(0x40, 0x50), Datapath("Zen 5 (desktop)", 2, 512, AMD_ZEN5)),
)
INTEL_DATAPATHS = (
    (6, {0x3C, 0x3F, 0x45, 0x46}, Datapath("Haswell", 2, 256, INTEL_MANUAL)),
    (6, {0x3D, 0x47, 0x4F, 0x56}, Datapath("Broadwell", 2, 256, INTEL_MANUAL)),
    (6, {0x4E, 0x5E, 0x8E, 0x9E, 0xA5, 0xA6}, Datapath("Skylake (client)", 2, 256, INTEL_MANUAL)),
    (6, {0x6A, 0x6C}, Datapath("Ice Lake-SP", 2, 512, INTEL_MANUAL)),
    (6, {0x8F}, Datapath("Sapphire Rapids", 2, 512, INTEL_MANUAL)),
    (6, {0xCF}, Datapath("Emerald Rapids", 2, 512, INTEL_MANUAL)),
    (6, {0xAD, 0xAE}, Datapath("Granite Rapids", 2, 512, INTEL_MANUAL)),
)
# AMX exists only on Intel's server cores from Sapphire Rapids on, all with two 512-bit FMA units: a
# hypervisor may show another model number (the Xeon with AMX seen here says model 167, Rocket Lake's).
AMX_DATAPATH = Datapath("Sapphire Rapids or later (AMX)", 2, 512, INTEL_MANUAL)
# Skylake-SP, Cascade Lake and Cooper Lake (model 85): Platinum and Gold 6xxx have two 512-bit FMA
# units, Gold 5xxx, Silver and Bronze one (but for a few SKUs: Gold 5122 and 5222 have two).
SKYLAKE_SP = 0x55
SKYLAKE_SP_TWO_UNITS = ("Platinum", "Gold 6", "Gold 5122", "Gold 5222")
SKYLAKE_SP_ONE_UNIT = ("Gold 5", "Silver", "Bronze")


def datapath(vendor, family, model, flags=(), name=""):
    """The core's Datapath, or None where the table does not know it (then no theoretical peak)."""
    flags = set(flags)
    if vendor == "AuthenticAMD":
        for known_family, models, path in AMD_DATAPATHS:
            if family == known_family and model in models:
                return path
        return None
    if vendor != "GenuineIntel":
        return None
    if "amx_tile" in flags:
        return AMX_DATAPATH
    if family == 6 and model == SKYLAKE_SP:
        for words, units in ((SKYLAKE_SP_TWO_UNITS, 2), (SKYLAKE_SP_ONE_UNIT, 1)):
            if any(word in name for word in words):
                return Datapath("Skylake-SP / Cascade Lake", units, 512, INTEL_ARK)
        return None
    for known_family, models, path in INTEL_DATAPATHS:
        if family == known_family and model in models:
            return path
    return None


def vendor_of(model_name):
    """The CPUID vendor from the marketing name, for records that kept only the name."""
    return "AuthenticAMD" if "AMD" in model_name else "GenuineIntel" if "Intel" in model_name else ""


def clock_ghz():
    """The CPU's clock in GHz as /proc/cpuinfo states it, or None."""
    try:
        return float(probe.cpu_info().get("cpu MHz")) / 1000
    except (TypeError, ValueError):
        return None


def theoretical(cores=None, flags=None, vendor=None, family=None, model=None, ghz=None, name=None):
    """{"fp32": GFLOP/s or None, "bf16": GFLOP/s or None, "fp32_how" and "bf16_how": the formulas
    in words, or why there is none, "ghz", "datapath": the core's name and the table's source}."""
    info = probe.cpu_info()
    cores = cores or probe.physical_cores()
    flags = set(probe.cpu_flags() if flags is None else flags)
    vendor = vendor or info.get("vendor_id", "")
    identity = probe.cpu_identity()
    family = identity[0] if family is None else family
    model = identity[1] if model is None else model
    name = probe.cpu_model() if name is None else name
    ghz = ghz or clock_ghz()
    unknown = {"fp32": None, "bf16": None, "ghz": ghz, "datapath": None, "bf16_how": None}
    if not ghz:
        return dict(unknown, fp32_how="the CPU states no clock")
    path = datapath(vendor, family, model, flags, name)
    if path is None:
        return dict(unknown, fp32_how=f"unknown: no FMA datapath known for {vendor or 'this vendor'} "
                                      f"family {family} model {model}")
    plural = "s" if cores != 1 else ""
    fp32 = 2 * cores * ghz * path.lanes * path.units
    how = f"{cores} core{plural} × {ghz:.2f} GHz × {path.units} {path.bits}-bit FMA units × {path.lanes} lanes × 2"
    bf16, bf16_how = None, "no native bf16 (neither AVX-512 BF16 nor AMX)"
    if "amx_bf16" in flags:
        bf16 = 2 * cores * ghz * AMX_BF16_MULTIPLY_ADDS_PER_CYCLE
        bf16_how = (f"{cores} core{plural} × {ghz:.2f} GHz × AMX's "
                    f"{AMX_BF16_MULTIPLY_ADDS_PER_CYCLE} multiply-adds a cycle × 2")
    elif "avx512_bf16" in flags:
        bf16 = 2 * fp32  # VDPBF16PS: a pair of bf16 products per fp32 lane
        bf16_how = how + " × 2 (AVX-512 BF16: two products per fp32 lane)"
    return {"fp32": round(fp32, 1), "bf16": None if bf16 is None else round(bf16, 1),
            "fp32_how": how, "bf16_how": bf16_how, "ghz": ghz,
            "datapath": f"{path.name}: {path.source}"}


def of_record(hardware):
    """common.peak.combine's peaks for a record's `hardware`, the theoretical figure taken afresh from
    the datapath table (a record keeps its GEMMs; its theory may predate a correction of the table),
    or the record's own peaks where it kept too little to say (no family, model or clock)."""
    stored = hardware.get("peak") or {}
    theory = stored.get("theoretical") or {}
    ghz = theory.get("ghz")
    if ghz is None:  # records from before the clock was kept on its own: their formula states it
        match = re.search(r"× ([0-9.]+) GHz", theory.get("fp32_how") or "")
        ghz = float(match.group(1)) if match else None
    cores = re.match(r"(\d+) core", theory.get("fp32_how") or "")
    if not stored or ghz is None or cores is None or None in (hardware.get("cpu_family"), hardware.get("cpu_model_number")):
        return stored
    fresh = theoretical(cores=int(cores.group(1)), flags=hardware.get("cpu_flags", ()),
                        vendor=vendor_of(hardware.get("cpu_model", "")), family=hardware["cpu_family"],
                        model=hardware.get("cpu_model_number"), ghz=ghz, name=hardware.get("cpu_model", ""))
    measured = {source: {precision: {int(size): gflops for size, gflops in by_size.items()}
                         for precision, by_size in by_precision.items()}
                for source, by_precision in (stored.get("measured") or {}).items()}
    return combine(measured, fresh)


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
