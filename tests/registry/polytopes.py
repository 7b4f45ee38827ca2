"""Small fast instances of the polytopes family for parametrize_with_checks."""

from sklearn.neural_network import MLPClassifier, MLPRegressor

from geolearn.polytopes import LocalLinearClustering, LocalLinearMap, ReLUPolytopes

ESTIMATORS = [
    ReLUPolytopes(network=MLPRegressor(hidden_layer_sizes=(6,), max_iter=30, random_state=0)),
    LocalLinearClustering(MLPClassifier(hidden_layer_sizes=(8,), max_iter=300, random_state=0), n_clusters=3,
                          random_state=0),
    LocalLinearMap(source=MLPClassifier(hidden_layer_sizes=(8,), max_iter=300, random_state=0),
                   target=MLPClassifier(hidden_layer_sizes=(6,), max_iter=300, random_state=1)),
]
