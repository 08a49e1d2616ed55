"""One batch order for every framework: a seeded permutation of the training set per epoch, cut
into whole batches. Frameworks that shuffle for themselves (Keras' `fit(shuffle=True)`,
`DataLoader(shuffle=True)`) would each walk another path; with this one, every framework sees the
same images in the same batches, so their losses can be held side by side."""
import numpy as np

SEED = 2018


def epoch_order(n_items, epoch, seed=SEED):
    """The permutation of range(n_items) used in `epoch` (0-based)."""
    if n_items < 1 or epoch < 0:
        raise ValueError(f"need n_items >= 1 and epoch >= 0, got {n_items}, {epoch}")
    return np.random.default_rng([seed, epoch]).permutation(n_items)


def epoch_batches(n_items, batch_size, epoch, seed=SEED):
    """(n_batches, batch_size) int64 indices of `epoch`'s whole batches (the remainder is dropped,
    as every notebook times whole batches only)."""
    if batch_size < 1 or batch_size > n_items:
        raise ValueError(f"batch_size must be in 1..{n_items}, got {batch_size}")
    n_batches = n_items // batch_size
    return epoch_order(n_items, epoch, seed)[:n_batches * batch_size].reshape(n_batches, batch_size)
