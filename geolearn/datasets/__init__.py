"""Bundled-data loaders and generators with known geometry. Nothing is downloaded."""

from ._adversarial import make_circle_classification, make_sine_plane_classification
from ._generative import (
    SHAPES3D_FACTORS,
    load_3dshapes,
    make_point_shapes,
    make_rotating_shape_images,
    make_shapes3d_like,
    make_two_digit_composites,
)
from ._images import load_digits_images, load_mnist_5k
from ._invariance import make_transforming_mnist
from ._ood import load_natural_patches, make_shape_images
from ._subspaces import make_planted_variety
from ._synthetic import (
    make_circle_points,
    make_sinusoid_boundary,
    make_sphere_points,
    make_stripes,
    make_torus_points,
    make_xor,
)
from ._topology import (
    CC_BOND,
    bond_lengths,
    load_cyclooctane,
    make_cyclooctane,
    make_klein_bottle_points,
    make_sphere_images,
    make_torus_ellipse_images,
)

__all__ = [
    "CC_BOND",
    "SHAPES3D_FACTORS",
    "bond_lengths",
    "load_3dshapes",
    "load_cyclooctane",
    "load_digits_images",
    "load_mnist_5k",
    "load_natural_patches",
    "make_circle_classification",
    "make_circle_points",
    "make_cyclooctane",
    "make_klein_bottle_points",
    "make_planted_variety",
    "make_point_shapes",
    "make_rotating_shape_images",
    "make_shape_images",
    "make_shapes3d_like",
    "make_sine_plane_classification",
    "make_sinusoid_boundary",
    "make_sphere_images",
    "make_sphere_points",
    "make_stripes",
    "make_torus_ellipse_images",
    "make_torus_points",
    "make_transforming_mnist",
    "make_two_digit_composites",
    "make_xor",
]
