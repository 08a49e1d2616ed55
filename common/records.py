"""The result record: one JSON object per (framework, task, variant, run), appended to a JSON-lines
file, never rewritten."""
import datetime
import json
import math
import os
from pathlib import Path

SCHEMA_VERSION = 1
# The validity protocol a record is made under: bump it when runner.verdict starts requiring a check,
# so that records made before it (without the field, or with a smaller number) leave the tables,
# while a record of today's protocol that lacks a check shows as invalid.
PROTOCOL = 5
STATUSES = ("ok", "failed", "skipped")
REQUIRED_FIELDS = ("schema_version", "framework", "task", "variant", "profile", "data", "status",
                   "hardware", "versions", "params", "metrics", "checks", "started_at")


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _plain(value):
    """JSON-safe copy: numpy scalars and arrays to Python, NaN/inf to strings the reader keeps."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def make_record(framework, task, profile, data, hardware, versions, params, metrics,
                checks=None, variant="default", data_source=None, started_at=None,
                status="ok", reason=None, notes=None):
    """Build a record; metric names carry their unit (`train_seconds`, `images_per_second`)."""
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}; valid: {', '.join(STATUSES)}")
    return _plain({
        "schema_version": SCHEMA_VERSION,
        "protocol": PROTOCOL,
        "framework": framework,
        "task": task,
        "variant": variant,
        "profile": profile,
        "data": data,
        "data_source": data_source,
        "status": status,
        "reason": reason,
        "hardware": hardware,
        "versions": versions,
        "params": params,
        "metrics": metrics,
        "checks": checks or {},
        "notes": notes,
        "started_at": started_at or now(),
        "finished_at": now(),
    })


def append_record(record, path):
    """Append one record as one line; the file is opened in append mode and flushed at once."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, sort_keys=True)
    with open(path, "a") as handle:
        handle.write(line + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return record


def read_records(path):
    """All records of a JSON-lines file; a torn last line (an interrupted write) is skipped."""
    path = Path(path)
    if not path.exists():
        return []
    records = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            print(f"[records] {path}:{number}: unreadable line skipped")
    return records


def missing_fields(record):
    return [field for field in REQUIRED_FIELDS if field not in record]


def show(record):
    """What the notebook's last cell prints: the record as indented JSON."""
    print(json.dumps(record, indent=1, sort_keys=True))
    return record


def artifact_path(record_path, name):
    """Where a notebook writes a file that belongs with its record (e.g. features): beside the
    record. The runner moves such files next to the executed notebook and lists them in the
    record's `artifacts`."""
    path = Path(record_path).resolve().parent / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
