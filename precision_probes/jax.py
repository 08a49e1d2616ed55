"""JAX: `jnp.matmul` and `lax.conv_general_dilated` (NCHW) on the default device, under the
notebook's `jax_default_matmul_precision`."""
import jax
import numpy as np
from jax import lax, numpy as jnp

from common import precision


def measure(run):
    return precision.checks(
        run.task, matmul=lambda a, b: np.asarray(jnp.matmul(jax.device_put(a), jax.device_put(b))),
        convolution=lambda x, w: np.asarray(lax.conv_general_dilated(
            jax.device_put(x), jax.device_put(w), (1, 1), "VALID", dimension_numbers=("NCHW", "OIHW", "NCHW"))))
