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


def window_offsets(n_tokens, block_size, batch_size, step, seed=SEED):
    """(batch_size,) int64 start offsets of `step`'s windows of `block_size + 1` tokens (inputs and
    their next tokens), drawn uniformly from a seeded generator per step, as nanoGPT draws its
    batches (torch.randint), so every framework trains on the same windows in the same order."""
    if n_tokens < block_size + 2:
        raise ValueError(f"need more than block_size + 1 = {block_size + 1} tokens, got {n_tokens}")
    return np.random.default_rng([seed, step]).integers(0, n_tokens - block_size - 1, size=batch_size)


def windows(tokens, offsets, block_size):
    """(inputs, targets), each (len(offsets), block_size): the windows at `offsets` and the same
    windows shifted by one token."""
    positions = np.asarray(offsets)[:, None] + np.arange(block_size)
    return tokens[positions], tokens[positions + 1]
