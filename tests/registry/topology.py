"""Estimator-check instances of the topology family.

The checks feed flat 2-D data: each row is then one cloud of points on a line
(``point_dim=None``), with H0 and H1 Betti curves over the fitted radii.
"""

from geolearn.topology import PersistenceTransformer

ESTIMATORS = [
    PersistenceTransformer(n_bins=4),
    PersistenceTransformer(homology_dimensions=(0,), features="persistence", n_bins=3,
                           backend="exact"),
]
