"""`run_all.py --import-records PATH`: another machine's records (its results folder) appended to
this one's, once each, with the executed notebooks and artifacts they name copied alongside; the
tables are regenerated after, with a column per machine."""
import shutil
import tarfile
import tempfile
from pathlib import Path

from common.paths import relative


def record_identity(record):
    """What tells one run's record from every other's, on any machine."""
    return tuple(str(record.get(key)) for key in
                 ("run_id", "framework", "task", "variant", "profile", "started_at", "finished_at"))


def import_records(source, results):
    """Append the records of `source` (a results folder, or a records.jsonl) that `results` has not
    got yet; return how many were added."""
    from common import records

    source, results = Path(source), Path(results)
    if source.name.endswith(".tar.gz"):  # what run_all.py --from-bundle packs
        with tempfile.TemporaryDirectory() as unpacked:
            with tarfile.open(source) as archive:
                archive.extractall(unpacked, filter="data")
            found = sorted(Path(unpacked).rglob("records.jsonl"))
            if not found:
                raise SystemExit(f"--import-records: no records.jsonl in {source}")
            return import_records(found[0].parent, results)
    records_file = source / "records.jsonl" if source.is_dir() else source
    records_path = results / "records.jsonl"
    known = {record_identity(record) for record in records.read_records(records_path)}
    added = 0
    for record in records.read_records(records_file):
        if record_identity(record) in known:
            continue
        record = dict(record)
        if record.get("notebook"):
            record["notebook"] = copy_result_file(records_file.parent, record["notebook"], results)
        if record.get("artifacts"):
            record["artifacts"] = {name: copy_result_file(records_file.parent, path, results)
                                   for name, path in record["artifacts"].items()}
        records.append_record(record, records_path)
        known.add(record_identity(record))
        added += 1
    print(f"[run] imported {added} record(s) from {records_file}")
    return added


def copy_result_file(source_results, stored_path, results):
    """A path a record stores (…/notebooks/<hardware>/<profile>/<file>) is looked up under the
    other machine's results folder and copied to the same place under `results`."""
    parts = Path(stored_path).parts
    if "notebooks" not in parts:
        return stored_path
    inner = Path(*parts[len(parts) - 1 - parts[::-1].index("notebooks"):])
    source, destination = Path(source_results) / inner, Path(results) / inner
    if not source.exists():
        return stored_path
    destination.parent.mkdir(parents=True, exist_ok=True)
    if source.resolve() != destination.resolve():
        shutil.copy2(source, destination)
    return relative(destination)
