"""GPT's yardsticks: the loss a model that looks back 0, 1 or 2 characters reaches on the validation
text, from the training text's counts with add-one (Laplace) smoothing over the vocabulary. A GPT
below the trigram's loss uses more context than the two characters before; one at the bigram's has
learnt which character follows which, and greedy sampling from it loops ("the the the")."""
import hashlib
import inspect
import json

import numpy as np

ORDERS = {"unigram": 1, "bigram": 2, "trigram": 3}
SMOOTHING = 1.0  # add-one: every continuation of a context seen once more than counted


def ngram_loss(train, valid, vocabulary_size, order, smoothing=SMOOTHING):
    """Mean negative log-likelihood (nats per character) of `valid`'s characters after its first
    order - 1, each predicted from the order - 1 before it by `train`'s smoothed counts."""
    train, valid = np.asarray(train, np.int64), np.asarray(valid, np.int64)
    if len(valid) < order or len(train) < order:
        raise ValueError(f"texts of {len(train)} and {len(valid)} characters are too short for order {order}")
    if vocabulary_size ** order > 10 ** 8:
        raise ValueError(f"{vocabulary_size} ** {order} counts would not fit in memory")
    if int(max(train.max(), valid.max())) >= vocabulary_size:
        raise ValueError(f"a token id is past the vocabulary of {vocabulary_size}")

    def keys(tokens):
        """(context id, context-and-next id) of every position with order - 1 characters before it."""
        context = np.zeros(len(tokens) - order + 1, np.int64)
        for offset in range(order - 1):
            context = context * vocabulary_size + tokens[offset:len(tokens) - order + 1 + offset]
        return context, context * vocabulary_size + tokens[order - 1:]

    train_context, train_pair = keys(train)
    valid_context, valid_pair = keys(valid)
    pair_counts = np.bincount(train_pair, minlength=vocabulary_size ** order)
    context_counts = np.bincount(train_context, minlength=vocabulary_size ** (order - 1))
    probability = ((pair_counts[valid_pair] + smoothing)
                   / (context_counts[valid_context] + smoothing * vocabulary_size))
    return float(-np.log(probability).mean())


def baselines(train, valid, vocabulary_size):
    """{"unigram": loss, "bigram": loss, "trigram": loss} of the validation text, kept in the data
    cache under a digest of both texts and this module (the whole training text, 32 M characters,
    takes seconds to count; every GPT notebook asks)."""
    from common.paths import data_cache, write_whole

    digest = hashlib.sha256(repr((vocabulary_size, SMOOTHING)).encode() + inspect.getsource(ngram_loss).encode())
    for tokens in (train, valid):
        digest.update(np.ascontiguousarray(tokens).tobytes())
    path = data_cache() / "ngrams" / f"baselines-{digest.hexdigest()[:20]}.json"
    if path.exists():
        return json.loads(path.read_text())
    found = {name: ngram_loss(train, valid, vocabulary_size, order) for name, order in ORDERS.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, json.dumps(found))
    return found
