"""The verdict: which records may be shown. Like MLPerf's validity rule, a speed figure counts only
when the same run also passed every check its task defines (REQUIRED_CHECKS: a missing check
fails), each within the bound recorded beside it, with a finite and decreasing loss and its quality
target met; otherwise `validity` says why. Every bound the checks are held to is listed by
`bounds` (they are defined beside the code that computes each check, in common), and a record made
before a check existed (`before_protocol`) leaves the tables.
"""
import math

from common.frameworks import precision as variant_precision
from common.precision import CONVOLUTION_TASKS, OPERATIONS
from common.params import (DEVICE_SWEEP_TASKS, QUALITY_TARGETS, THREAD_SWEEP_TASKS, meets_target, quality_metric,
                           quality_target)

ACCURACY_MARGIN = 0.05  # above chance by at least this much
# A run may keep at most this much more than its pinned threads busy (measurement slack, the
# interpreter's own thread) before its thread count is called a fiction.
CPU_SLACK = 1.15
# The checks a record of each task must carry. Errors are held to the tolerance recorded beside
# them (`<name>_max_abs_error` or `<name>_relative_error` ≤ `<name>_tolerance`), accuracy to its
# `quality_target`.
REQUIRED_CHECKS = {
    "CNN": ("train_parity_max_abs_error", "quality_target"),
    "RNN": ("train_parity_max_abs_error", "quality_target"),
    "Inference": ("feature_max_abs_error", "known_photos_correct"),
    # FCN5: its whole run matches numpy's; the run on every core also meets its quality target
    # where its profile has one (required_checks).
    "FCN5": ("train_parity_max_abs_error", "train_trajectory_max_abs_error"),
    # MultiGPU's quality bar on synthetic images: N devices make the same SGD update as one, every
    # replica made the same update in the timed epochs (the runs on all devices check both), and the
    # loss on the check's fixed batch falls (mean AUC means something only on the real images).
    "MultiGPU": ("data_parallel_update_relative_error", "data_parallel_replica_relative_error"),
    "GPT": ("train_parity_max_abs_error", "quality_target"),
}

# fp32 measured (common.precision, precision_probes): every run's own product, and where its task has
# them its convolution and its fused RNN, against float64. A GPU run needs the probe from the protocol
# that brought it (the TF32 rows it exposes were GPU rows); a CPU run, whose frameworks compute fp32 in
# fp32 unless told otherwise, from the records of that protocol on.
PRECISION_CHECKS = {task: ("precision_matmul_relative_error",)
                    + (("precision_convolution_relative_error",) if task in CONVOLUTION_TASKS else ())
                    for task in REQUIRED_CHECKS}
PRECISION_PROTOCOL = 5

# The verdict on a bf16 run whose checks passed where bf16 is not native (harness.finish records it).
EMULATED = "emulated: bf16 not native here (checks passed)"

# The task's headline figure, then the extra figures a cell shows beside it.
HEADLINES = {
    "CNN": ("images_per_second", "img/s"),
    "Inference": ("images_per_second", "img/s"),
    "RNN": ("sequences_per_second", "seq/s"),
    "MultiGPU": ("images_per_second", "img/s"),
    "FCN5": ("seconds_per_step", "s/batch"),  # the median training mini-batch
    "GPT": ("tokens_per_second", "tok/s"),
}


def _number(value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number


def has_target(record):
    """Whether the record's task, profile and data set have a quality target (common.params): False
    where the parameters say there is none (FCN5's smoke run), None where they cannot say."""
    try:
        return quality_target(record.get("task"), record.get("profile"), record.get("data_source")) is not None
    except (ValueError, KeyError):
        return None


# A check's error and its bound: `<name><suffix>` beside `<name>_tolerance`.
ERROR_SUFFIXES = ("_max_abs_error", "_relative_error")


def validity(record, whole=False):
    """(True, '') when the record's figures may be shown, else (False, why): a failed or skipped
    run's reason cut to fit a table cell, or `whole`."""
    status = record.get("status")
    if status != "ok":
        reason = (record.get("reason") or "").strip().splitlines()
        short = (reason[-1] if whole else reason[-1][:60]) if reason else "no reason given"
        return False, f"{status}: {short}"
    metrics, checks = record.get("metrics", {}), record.get("checks", {})
    losses = metrics.get("epoch_losses")
    if losses is not None:
        numbers = [_number(loss) for loss in losses]
        if not numbers or any(n is None or not math.isfinite(n) for n in numbers):
            return False, "invalid: loss NaN"
        if len(numbers) > 1 and not numbers[-1] < numbers[0]:
            return False, "invalid: loss did not decrease"
    accuracy = _number(metrics.get("test_accuracy"))
    judged = accuracy_judged(record)
    # The chance rule holds where accuracy is the quality measure (tasks with quality targets).
    if "test_accuracy" in metrics and record.get("task") in QUALITY_TARGETS and judged:
        params = record.get("params", {})
        n_classes = params.get("n_classes") or (params.get("layer_sizes") or [2])[-1]
        if accuracy is None or accuracy < 1.0 / n_classes + ACCURACY_MARGIN:
            return False, "invalid: accuracy at chance"
    missing = missing_checks(record)
    if missing:
        return False, f"invalid: no {missing[0]} check"
    reduced = reduced_precision(record)
    if reduced:
        return False, f"invalid: {reduced}"
    beyond = errors_beyond_bounds(checks)
    if beyond:
        name, value, _, _ = beyond[0]
        return False, f"invalid: {name} error {value}"
    busy, pinned = _number(metrics.get("cpus_busy")), _number(record.get("hardware", {}).get("threads_pinned"))
    if busy is not None and pinned and not record.get("hardware", {}).get("gpu_count") and busy > CPU_SLACK * pinned + 0.15:
        return False, f"invalid: kept {busy:.1f} cores busy with {pinned:.0f} thread(s) pinned"
    if "quality_target" in checks:
        metric, direction = quality_metric(record.get("task"))
        target, value = _number(checks["quality_target"]), _number(metrics.get(metric))
        if target is None or value is None or not meets_target(record.get("task"), value, target):
            side = "below" if direction == "at least" else "above"
            name = "accuracy" if metric == "test_accuracy" else metric.replace("_", " ")
            return False, f"invalid: {name} {metrics.get(metric)} {side} target {checks['quality_target']}"
    replicas, devices = checks.get("data_parallel_replicas"), metrics.get("devices")
    if replicas is not None and replicas != devices:
        return False, f"invalid: {replicas} replica(s) compared on {devices} devices"
    shards = checks.get("data_parallel_batch_shards")
    if shards is not None and shards != devices:
        return False, f"invalid: the timed batches cut into {shards} slice(s) on {devices} devices"
    if checks.get("data_parallel_loss_fell") is False:
        return False, "invalid: the data-parallel check's loss did not fall"
    if checks.get("known_photos_correct") is False:
        return False, "invalid: known photo misclassified"
    # With real weights and photos the known-photo check must have run; only a synthetic run
    # (random weights or stand-in images, whose classes mean nothing) may record it as None.
    if "known_photos_correct" in checks and record.get("data") == "real" and checks["known_photos_correct"] is not True:
        return False, "invalid: known photos not checked"
    headline, _ = HEADLINES.get(record.get("task"), (None, None))
    value = _number(metrics.get(headline))
    if headline and (value is None or not math.isfinite(value) or value <= 0):
        return False, f"invalid: no {headline}"
    if record.get("hardware", {}).get("bf16_native") is False:
        # Its checks passed, but the framework emulated bf16 (run_all.py --emulate-bf16): no speed to show.
        return False, EMULATED
    return True, ""


def errors_beyond_bounds(checks):
    """[(check, recorded value, error, bound)] of every `<check>_max_abs_error` or
    `<check>_relative_error` not within its `<check>_tolerance` (a missing or unreadable number is
    not within it), in the order of their names."""
    found = []
    for name in sorted(checks):
        suffix = next((suffix for suffix in ERROR_SUFFIXES if name.endswith(suffix)), None)
        if suffix:
            check = name.removesuffix(suffix)
            error, bound = _number(checks[name]), _number(checks.get(f"{check}_tolerance"))
            if error is None or bound is None or not error <= bound:
                found.append((check, checks[name], error, bound))
    return found


def precision_errors(checks):
    """{operation: error} of the record's precision probe (common.precision), where it recorded one."""
    found = {}
    for operation in OPERATIONS:
        error = _number(checks.get(f"precision_{operation}_relative_error"))
        if error is not None:
            found[operation] = error
    return found


def reduced_precision(record):
    """Why the record's precision probe says its products ran below IEEE fp32 ("ran in reduced
    precision: matmul 2.3e-04 from float64, fp32 stays below 1e-05"), or ''."""
    for check, value, error, bound in errors_beyond_bounds(record.get("checks", {})):
        if check.startswith("precision_"):
            what = check.removeprefix("precision_")
            shown = f"{error:.1e}" if error is not None else value
            return (f"ran in reduced precision: {what} {shown} from float64, fp32 stays below {bound:.0e}" if bound
                    else f"no bound for its {what} precision")
    return ""


def accuracy_judged(record):
    """Accuracy is judged on a run meant to reach a target: not a thread sweep's timing runs nor a
    short run (accuracy_run False: an emulated bf16 run, a variant's smoke run; params.SHORT_RUN),
    nor a profile whose parameters set none (FCN5's smoke run)."""
    return record.get("params", {}).get("accuracy_run", True) is not False and has_target(record) is not False


def required_checks(record):
    """The checks this record must carry (REQUIRED_CHECKS, and what its variant and settings add)."""
    task, metrics = record.get("task"), record.get("metrics", {})
    required = REQUIRED_CHECKS.get(task, ())
    if not accuracy_judged(record):
        required = tuple(check for check in required if check != "quality_target")  # a short run's
    if task in THREAD_SWEEP_TASKS and accuracy_judged(record):
        required += ("quality_target",)
    if variant_precision(record.get("variant")) != "fp32":
        # Its parity is of its model in fp32; its own features or steps are held to their rounding.
        required += ("bf16_feature_relative_error",) if task == "Inference" else ("bf16_train_parity_max_abs_error",)
    if task in DEVICE_SWEEP_TASKS and metrics.get("devices") == 1:
        # A 1-device run exercises no engine (the runs on several devices check it): its own steps
        # on the check's fixed batch must lower the loss.
        required = ("data_parallel_loss_fell",)
    if (record.get("protocol") or 1) >= PRECISION_PROTOCOL or record.get("hardware", {}).get("gpu_count"):
        required += PRECISION_CHECKS.get(task, ())
    return required


def missing_checks(record):
    checks = record.get("checks", {})
    return [name for name in required_checks(record) if name not in checks]


def before_protocol(record):
    """A run made under an older protocol (common.records.PROTOCOL) that lacks a check today's
    requires: it was made before that check existed. Such records stay in records.jsonl and leave the
    tables; a record of today's protocol without a check is invalid instead, and says so."""
    from common.records import PROTOCOL

    return (record.get("protocol") or 1) < PROTOCOL and record.get("status") == "ok" and bool(missing_checks(record))


def bounds():
    """{check: the bound the code holds it to today}, for every check with a numeric bound."""
    from common import densenet, numpy_resnet, precision, reference

    found = {f"training parity, {task}": bound for task, bound in reference.TRAIN_PARITY_TOLERANCE.items()}
    found.update({f"training parity (bf16), {task}": bound for task, bound in reference.BF16_TRAIN_PARITY_TOLERANCE.items()})
    found["FCN5 trajectory"] = reference.TRAIN_TRAJECTORY_TOLERANCE
    found["FCN5 trajectory (bf16)"] = reference.BF16_TRAIN_TRAJECTORY_TOLERANCE
    found["feature parity"] = numpy_resnet.FEATURE_TOLERANCE
    found["bf16 features"] = numpy_resnet.BF16_FEATURE_TOLERANCE
    found["MultiGPU equivalence"] = densenet.UPDATE_TOLERANCE
    found["MultiGPU replicas"] = densenet.REPLICA_TOLERANCE
    found.update({f"fp32 precision, {what}": precision.ERROR_BOUND for what in OPERATIONS})
    return found
