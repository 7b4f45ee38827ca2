"""Bundled-data loaders and generators with known geometry. Nothing is downloaded."""

from ._images import load_digits_images, load_mnist_5k
from ._synthetic import (
    make_circle_points,
    make_sinusoid_boundary,
    make_sphere_points,
    make_stripes,
    make_torus_points,
    make_xor,
)

__all__ = [
    "load_digits_images",
    "load_mnist_5k",
    "make_circle_points",
    "make_sinusoid_boundary",
    "make_sphere_points",
    "make_stripes",
    "make_torus_points",
    "make_xor",
]
