"""fp32 measured, not assumed: the precision a framework really computed a run's float32 products in.
Each framework's own matrix product and convolution (precision_probes/, run inside the notebook's
process after its set-up, on the device it chose) of the fixed float32 inputs below, held against
the same sums in float64. IEEE fp32 rounds each product and sum to 24 significant bits, TF32 rounds
the inputs to 11, bf16 to 8: their relative errors lie orders of magnitude apart, and ERROR_BOUND
sits between fp32 and TF32 (runner.margins shows both margins)."""
import numpy as np

SEED = 32
MATMUL_SHAPE = (64, 256, 64)  # (m, k, n): a (m × k) times b (k × n)
CONVOLUTION_SHAPE = (2, 16, 10, 10, 16, 3)  # batch, input channels, height, width, output channels, kernel
# A relative error (the largest difference over the largest float64 value) above this is not IEEE
# fp32: a sum of 256 products rounded in fp32 stays about a hundred times below it, TF32's rounding
# of the inputs lands tens of times above it.
ERROR_BOUND = 1e-5
# The tasks whose models convolve: their probe measures a convolution beside the product.
CONVOLUTION_TASKS = ("CNN", "Inference", "MultiGPU")
# What a probe may measure: each a check `precision_<operation>_relative_error` of the record.
OPERATIONS = ("matmul", "convolution", "recurrent")
# Significant bits a format keeps of an fp32 input (the implicit one included).
SIGNIFICANT_BITS = {"tf32": 11, "bf16": 8}


def uniform(shape, offset):
    """Fixed float32 values in [-1, 1) of `shape`, one set per offset."""
    return np.random.default_rng(SEED + offset).uniform(-1, 1, shape).astype(np.float32)


def matmul_inputs():
    """(a, b): float32 arrays of MATMUL_SHAPE."""
    m, k, n = MATMUL_SHAPE
    return uniform((m, k), 0), uniform((k, n), 1)


def convolution_inputs(layout="NCHW"):
    """(x, w) of a stride-1 convolution without padding: NCHW images with OIHW filters, or NHWC
    images with HWIO filters."""
    batch, channels, height, width, filters, size = CONVOLUTION_SHAPE
    x, w = uniform((batch, channels, height, width), 2), uniform((filters, channels, size, size), 3)
    if layout == "NHWC":
        return np.ascontiguousarray(x.transpose(0, 2, 3, 1)), np.ascontiguousarray(w.transpose(2, 3, 1, 0))
    if layout != "NCHW":
        raise ValueError(f"unknown layout {layout!r}; valid: NCHW, NHWC")
    return x, w


def convolution_reference(x, w, layout="NCHW"):
    """The cross-correlation every framework calls a convolution, in float64, in `layout`."""
    if layout == "NHWC":
        x, w = x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1)
    size = w.shape[-1]
    windows = np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), (size, size), axis=(2, 3))
    out = np.einsum("bchwij,ocij->bohw", windows, w.astype(np.float64))
    return out.transpose(0, 2, 3, 1) if layout == "NHWC" else out


def relative_error(result, reference):
    result, reference = np.asarray(result, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    if result.shape != reference.shape:
        raise ValueError(f"the probe returned shape {result.shape}, expected {reference.shape}")
    return float(np.abs(result - reference).max() / np.abs(reference).max())


def rounded(array, fmt):
    """float32 `array` with its significands rounded to `fmt`'s bits (round to nearest even): what a
    TF32 or bf16 unit reads of its inputs."""
    drop = 24 - SIGNIFICANT_BITS[fmt]
    bits = np.asarray(array, dtype=np.float32).view(np.uint32).astype(np.uint64)
    half, ones = 1 << (drop - 1), (1 << drop) - 1
    bits = (bits + half - 1 + ((bits >> drop) & 1)) & ~np.uint64(ones)
    return bits.astype(np.uint32).view(np.float32)


def checks(task, matmul, convolution, layout="NCHW", recurrent=None):
    """The record's precision checks of a run of `task`: `matmul(a, b)` and, for a task of
    CONVOLUTION_TASKS, `convolution(x, w)` (in `layout`) are the framework's own, returning numpy;
    `recurrent()`, where a fused RNN kernel has a precision switch of its own (cuDNN's), returns its
    (float32, float64) outputs of one input. Each error is held to ERROR_BOUND, printed as well."""
    a, b = matmul_inputs()
    found = {"precision_matmul_relative_error": relative_error(matmul(a, b), a.astype(np.float64) @ b)}
    if task in CONVOLUTION_TASKS:
        x, w = convolution_inputs(layout)
        found["precision_convolution_relative_error"] = relative_error(convolution(x, w),
                                                                       convolution_reference(x, w, layout))
    if recurrent is not None:
        found["precision_recurrent_relative_error"] = relative_error(*recurrent())
    found.update({name.replace("_relative_error", "_tolerance"): ERROR_BOUND for name in list(found)})
    print("fp32 precision:", {name: f"{value:.1e}" for name, value in found.items() if name.endswith("_error")})
    return found


def reduced_copies():
    """[(check, copy, error, bound)] of the probe's numpy copies: the product and the convolution
    computed from inputs rounded as TF32 and bf16 units round them, accumulated in float64."""
    a, b = matmul_inputs()
    x, w = convolution_inputs()
    expected_product, expected_convolution = a.astype(np.float64) @ b, convolution_reference(x, w)
    found = []
    for fmt in SIGNIFICANT_BITS:
        product = rounded(a, fmt).astype(np.float64) @ rounded(b, fmt)
        found.append(("fp32 precision, matmul", f"{fmt} inputs", relative_error(product, expected_product),
                      ERROR_BOUND))
        found.append(("fp32 precision, convolution", f"{fmt} inputs",
                      relative_error(convolution_reference(rounded(x, fmt), rounded(w, fmt)), expected_convolution),
                      ERROR_BOUND))
    return found
