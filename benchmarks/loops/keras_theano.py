"""Keras 2 on Theano's plain loop: the framework's own `fit` on in-memory numpy arrays, one call
for the warm-up steps (it builds and compiles the Theano train function) and one call of one epoch
for the timed steps (`epochs=1, shuffle=False, verbose=0`: no progress bar, no per-epoch shuffle),
under the notebook's Theano flags. Keras 2's `fit` has no steps_per_execution: it calls its
callbacks after every batch whatever the loop."""
import collections
import collections.abc
import os

import clock

loop = clock.start(("CNN",))  # pins the threads before Theano is imported

from common import paths  # noqa: E402

# The notebook's flags: float32, OpenBLAS, compiled ops cached under the project's cache.
os.environ["THEANO_FLAGS"] = f"floatX=float32,blas.ldflags=-lopenblas,base_compiledir={paths.cache_root() / 'theano'}"
os.environ["KERAS_BACKEND"] = "theano"
os.environ["KERAS_HOME"] = str(paths.cache_root() / "keras-theano")
# Keras 2.3 imports the ABCs from `collections` (removed in Python 3.10).
for name in ("Iterable", "Mapping", "MutableMapping", "Sequence"):
    setattr(collections, name, getattr(collections.abc, name))

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

# No thread API in Theano: OPENBLAS_NUM_THREADS (set by clock.start) sizes OpenBLAS.
keras.backend.set_image_data_format("channels_first")
params = loop.params


def cnn():
    model = keras.Sequential([
        layers.InputLayer(input_shape=tuple(params["image_shape"])),
        layers.Conv2D(50, 3, padding="same", activation="relu"),
        layers.Conv2D(50, 3, padding="same"), layers.MaxPooling2D(2), layers.ReLU(), layers.Dropout(0.25),
        layers.Conv2D(100, 3, padding="same", activation="relu"),
        layers.Conv2D(100, 3, padding="same"), layers.MaxPooling2D(2), layers.ReLU(), layers.Dropout(0.25),
        layers.Flatten(), layers.Dense(512, activation="relu"), layers.Dropout(0.5), layers.Dense(params["n_classes"]),
    ])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=params["learning_rate"], momentum=params["momentum"]),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = loop.images(), loop.labels()

    def gathered(first, n_steps):
        """The batches of steps first … first + n_steps - 1, as one (images, labels) pair."""
        steps = range(first, first + n_steps)
        return [np.concatenate([loop.batch(step, array) for step in steps]) for array in (x, y)]

    def fit(arrays):
        model.fit(*arrays, batch_size=loop.batch_size, epochs=1, shuffle=False, verbose=0)

    # Gathered before the clock starts, as the notebook gathers each epoch's images before its timer.
    warm_up, timed = gathered(0, loop.warmup_steps), gathered(loop.warmup_steps, loop.timed_steps)
    return loop.measure_call(lambda: fit(warm_up), lambda: fit(timed))


loop.run({"CNN": cnn})
