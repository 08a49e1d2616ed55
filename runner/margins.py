"""Every bound of the validity rule beside its two margins: the largest error a correct notebook
produced (over frameworks, variants and the machines in the records) and the smallest error a
deliberately broken copy produced (runner.broken_copies, kept in results/broken_copies.jsonl).
A bound closer than MIN_MARGIN to either side is flagged: it is a defect to fix."""
from pathlib import Path

from common.frameworks import precision
from common.precision import OPERATIONS
from common.probe import hardware_label
from common.records import append_record, read_records
from runner import verdict

BROKEN_COPIES_FILE = "broken_copies.jsonl"
DEFAULT_MIN_MARGIN = 10
# bf16 keeps 8 significant bits: a correct run's three steps already differ from float64 by a few
# per cent of the logits, the grossest mistakes by tens of per cent (common.reference), which leaves
# a few times on each side; the subtle mistakes are the fp32 parity's, which a bf16 variant passes too.
BF16_MIN_MARGIN = 3
MIN_MARGIN = {"MultiGPU equivalence": 100, "MultiGPU replicas": 100, "FCN5 trajectory (bf16)": BF16_MIN_MARGIN,
              **{f"training parity (bf16), {task}": BF16_MIN_MARGIN for task in ("CNN", "RNN", "FCN5")}}

# check name: (task, the record's error field, which records: a predicate on the record)
CHECKS = {
    "training parity, CNN": ("CNN", "train_parity_max_abs_error", None),
    "training parity, RNN": ("RNN", "train_parity_max_abs_error", None),
    "training parity, FCN5": ("FCN5", "train_parity_max_abs_error", None),
    "training parity, GPT": ("GPT", "train_parity_max_abs_error", None),
    "training parity (bf16), CNN": ("CNN", "bf16_train_parity_max_abs_error", None),
    "training parity (bf16), RNN": ("RNN", "bf16_train_parity_max_abs_error", None),
    "training parity (bf16), FCN5": ("FCN5", "bf16_train_parity_max_abs_error", None),
    "FCN5 trajectory": ("FCN5", "train_trajectory_max_abs_error", lambda record: precision(record.get("variant")) == "fp32"),
    "FCN5 trajectory (bf16)": ("FCN5", "train_trajectory_max_abs_error", lambda record: precision(record.get("variant")) != "fp32"),
    # Every variant's model in fp32: a bf16 variant's own since it records its bf16 features apart.
    "feature parity": ("Inference", "feature_max_abs_error",
                       lambda record: precision(record.get("variant")) == "fp32"
                       or "bf16_feature_relative_error" in record.get("checks", {})),
    "bf16 features": ("Inference", "bf16_feature_relative_error", None),
    "MultiGPU equivalence": ("MultiGPU", "data_parallel_update_relative_error", None),
    "MultiGPU replicas": ("MultiGPU", "data_parallel_replica_relative_error", None),
    # Every task's runs, fp32 and bf16 alike: the probe measures the fp32 products either way.
    **{f"fp32 precision, {what}": (None, f"precision_{what}_relative_error", None)
       for what in OPERATIONS},
}


def read_broken(results):
    return read_records(Path(results) / BROKEN_COPIES_FILE)


def append_broken(results, entries):
    for entry in entries:
        append_record(entry, Path(results) / BROKEN_COPIES_FILE)


# Checks of a whole run: how far a mistake moves it depends on the run's length, so a correct run
# is held beside the copies of its own profile (runner.broken_copies.trajectory_copies).
WHOLE_RUN_CHECKS = ("FCN5 trajectory", "FCN5 trajectory (bf16)")


def copy_profile(entry):
    """The profile a broken copy's run had: its 'profile', or the one its name says (smoke unsaid)."""
    from runner.broken_copies import split_profile

    return entry.get("profile") or split_profile(entry.get("copy", ""))[1]


def _where(record):
    variant = record.get("variant")
    shown = record.get("framework", "?") + ("" if variant in (None, "", "default") else f" ({variant})")
    return f"{shown}, {hardware_label(record.get('hardware', {}))}"


def rows(all_records, broken):
    """[(check, today's bound, (largest correct error, where) or None, (smallest broken error, which)
    or None)]."""
    found = []
    bounds = verdict.bounds()
    # The numpy copies are computed together and alike on every machine: the newest sitting holds
    # today's set (a copy dropped from a check since is not held against it). Broken engines run
    # per framework: each sitting's stay.
    numpy_sittings = [entry.get("started_at", "") for entry in broken if entry.get("kind") == "numpy"]
    newest = max(numpy_sittings, default=None)
    broken = [entry for entry in broken if entry.get("kind") != "numpy" or entry.get("started_at", "") == newest]
    for check, (task, field, keep) in CHECKS.items():
        # A run whose own probe found reduced precision is no correct run of any check.
        judged = [record for record in all_records
                  if task in (None, record.get("task")) and record.get("status") == "ok"
                  and isinstance(record.get("checks", {}).get(field), (int, float))
                  and (keep is None or keep(record)) and not verdict.reduced_precision(record)]
        correct = [(record["checks"][field], _where(record)) for record in judged]
        profiles = {record.get("profile") for record in judged}
        copies = [(entry["error"], entry["copy"] + (f" ({entry['hardware']})" if entry.get("hardware") else ""))
                  for entry in broken if entry.get("check") == check and isinstance(entry.get("error"), (int, float))
                  and (check not in WHOLE_RUN_CHECKS or not judged or copy_profile(entry) in profiles)]
        bound = bounds.get(check)
        found.append((check, bound, max(correct) if correct else None, min(copies) if copies else None))
    return found


def _margin(ratio, needed):
    if ratio is None:
        return "—"
    text = f"{ratio:,.0f}×" if ratio >= 10 else f"{ratio:.2g}×"
    return text if ratio >= needed else f"**{text}: too close**"


def markdown(all_records, broken):
    lines = ["### Bounds and their margins", "",
             "Each check of the validity rule beside the largest error a correct notebook produced (over every "
             "framework, variant and machine in the records) and the smallest error a deliberately broken copy "
             "produced (`runner/broken_copies.py`: the numpy reference with one mistake, or a MultiGPU notebook "
             "with its engine broken, run by `benchmarks/broken_copies.py`; the numpy copies of their newest "
             "sitting, and for FCN5's whole-run trajectory those run as long as the correct runs). A bound must "
             "sit at least "
             f"{DEFAULT_MIN_MARGIN}× from both ({MIN_MARGIN['MultiGPU equivalence']}× for the equivalence check, "
             f"{BF16_MIN_MARGIN}× for the bf16 ones: bf16's rounding leaves no more).", "",
             "| check | bound | largest error, correct | below the bound | smallest error, broken | above the bound |",
             "| --- | --- | --- | --- | --- | --- |"]
    for check, bound, correct, copy in rows(all_records, broken):
        needed = MIN_MARGIN.get(check, DEFAULT_MIN_MARGIN)
        below = bound / correct[0] if bound and correct and correct[0] > 0 else None
        above = copy[0] / bound if bound and copy else None
        lines.append(f"| {check} | {bound:.0e} | " if bound else f"| {check} | — | ")
        lines[-1] += (f"{correct[0]:.1e} ({correct[1]}) | " if correct else "— | ") + _margin(below, needed) + " | "
        lines[-1] += (f"{copy[0]:.2g} ({copy[1]}) | " if copy else "— | ") + _margin(above, needed) + " |"
    return "\n".join(lines)
