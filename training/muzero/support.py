"""Values and rewards as distributions over a fixed support (MuZero, appendix F).

A scalar x is first squashed by the invertible scaling

    h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x          (eps = 0.001)

(`transform=True`; unbounded returns such as 2048's points shrink by about
their square root), then written as a "two-hot" distribution over the
`num_bins` evenly spaced points of [-bound, bound]: the two neighbouring
points share the mass so that the distribution's mean is exactly h(x)
(clipped to the bound). A network head outputs logits over the same points;
its scalar is h^-1 of the softmax's mean. Bounded games (results in [-1, 1])
use no scaling and a few bins.

    support = Support(bound=300.0, num_bins=601, transform=True)   # 2048's points
    probs = support.two_hot(targets)       # [...] -> [..., num_bins]
    values = support.scalar(logits)        # [..., num_bins] -> [...]
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

EPSILON = 0.001


def scale(x: jax.Array) -> jax.Array:
    """h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x."""
    return jnp.sign(x) * (jnp.sqrt(jnp.abs(x) + 1.0) - 1.0) + EPSILON * x


def unscale(y: jax.Array) -> jax.Array:
    """h^-1(y), the closed form (MuZero's appendix): h^-1(h(x)) = x."""
    root = (jnp.sqrt(1.0 + 4.0 * EPSILON * (jnp.abs(y) + 1.0 + EPSILON)) - 1.0) / (2.0 * EPSILON)
    return jnp.sign(y) * (root ** 2 - 1.0)


@dataclasses.dataclass(frozen=True)
class Support:
    """A categorical support: `num_bins` (odd, >= 3) points evenly spaced over
    [-bound, bound], in h-space when `transform` (else on the raw scale)."""

    bound: float = 1.0
    num_bins: int = 21
    transform: bool = False

    def __post_init__(self):
        if not isinstance(self.num_bins, int) or self.num_bins < 3 or self.num_bins % 2 == 0:
            raise ValueError(f"support num_bins must be an odd int >= 3, got {self.num_bins!r}")
        if not self.bound > 0:
            raise ValueError(f"support bound must be positive, got {self.bound!r}")

    @property
    def points(self) -> jax.Array:
        """[num_bins] float32, the support's points (h-space when `transform`)."""
        return jnp.linspace(-self.bound, self.bound, self.num_bins, dtype=jnp.float32)

    def two_hot(self, x: jax.Array) -> jax.Array:
        """Scalars [...] -> distributions [..., num_bins] whose mean is h(x) (or
        x), clipped to the bound."""
        y = scale(x) if self.transform else x
        step = 2.0 * self.bound / (self.num_bins - 1)
        position = (jnp.clip(y.astype(jnp.float32), -self.bound, self.bound) + self.bound) / step
        low = jnp.clip(jnp.floor(position), 0, self.num_bins - 2)
        upper_weight = position - low
        low = low.astype(jnp.int32)
        return (jax.nn.one_hot(low, self.num_bins) * (1.0 - upper_weight)[..., None]
                + jax.nn.one_hot(low + 1, self.num_bins) * upper_weight[..., None])

    def scalar(self, logits: jax.Array) -> jax.Array:
        """Logits [..., num_bins] -> the scalar [...] (h^-1 of the mean when
        `transform`)."""
        mean = jnp.sum(jax.nn.softmax(logits.astype(jnp.float32), axis=-1) * self.points, -1)
        return unscale(mean) if self.transform else mean

    def loss(self, logits: jax.Array, x: jax.Array) -> jax.Array:
        """Cross-entropy [...] of logits [..., num_bins] against two_hot(x)."""
        return -jnp.sum(self.two_hot(x) * jax.nn.log_softmax(logits.astype(jnp.float32)), -1)
