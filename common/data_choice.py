"""The data choice every loader honours and the error it raises when no source answers: a leaf
module, so that `data` (the entry point) and the loaders and sources it calls all import it
without importing one another."""
from common.params import DATA_CHOICES


class DataUnavailable(RuntimeError):
    """No source of a data set could be reached or verified; the message lists what was tried."""


def check_choice(data):
    if data not in DATA_CHOICES:
        raise ValueError(f"unknown data choice {data!r}; valid: {', '.join(DATA_CHOICES)}")
