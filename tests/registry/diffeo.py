"""Estimator-check instances for geolearn.diffeo."""

from sklearn.linear_model import LogisticRegression

from geolearn.diffeo import DiffeoStability, MaxEntropyDiffeo

ESTIMATORS = [
    MaxEntropyDiffeo(apply_on="always", T=0.005, random_state=0),
    DiffeoStability(LogisticRegression(max_iter=50), random_state=0),
]
