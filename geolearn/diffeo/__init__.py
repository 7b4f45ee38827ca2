"""Relative stability toward diffeomorphisms (Petrini, Favero, Geiger, Wyart, NeurIPS 2021).

- the maximum-entropy ensemble of smooth deformations at temperature ``T`` and
  cut-off ``c``: :func:`sample_displacement_fields`, :func:`deform`,
  :func:`max_xi`, :func:`deformation_grid` and the temperature utilities;
- the stabilities ``D_f``, ``G_f`` and ``R_f = D_f / G_f`` of any model
  (through :func:`geolearn.models.as_model`): :class:`DiffeoStability`,
  :func:`relative_stability`, :func:`make_stability_scorer`, and the stripe
  model's :func:`subspace_relative_stability`; blockwise through
  :meth:`DiffeoStability.partial_stats` and :class:`StabilityStats`;
- the deformations as augmentation: :class:`MaxEntropyDiffeo` (a transformer),
  :class:`DiffeoAugment` (a torch module) and :func:`diffeo_augment`.
"""

from ._exceptions import StabilityWarning
from ._sampler import (
    GAUSSIAN_SIGMA,
    deform,
    deformation_grid,
    displacement_delta,
    max_xi,
    sample_displacement_fields,
    temperature_for_delta,
    temperature_range,
)
from ._stability import (
    DiffeoStability,
    log_average,
    log_std,
    make_stability_scorer,
    relative_stability,
    subspace_relative_stability,
)
from ._stats import StabilityStats
from ._transformer import DiffeoAugment, MaxEntropyDiffeo, diffeo_augment

__all__ = [
    "GAUSSIAN_SIGMA",
    "DiffeoAugment",
    "DiffeoStability",
    "MaxEntropyDiffeo",
    "StabilityStats",
    "StabilityWarning",
    "deform",
    "deformation_grid",
    "diffeo_augment",
    "displacement_delta",
    "log_average",
    "log_std",
    "make_stability_scorer",
    "max_xi",
    "relative_stability",
    "sample_displacement_fields",
    "subspace_relative_stability",
    "temperature_for_delta",
    "temperature_range",
]
