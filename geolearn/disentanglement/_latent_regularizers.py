"""Latent regularisers for any autoencoder: block orthogonality and graph divergence.

From "Orthogonality and graph divergence losses promote disentanglement in generative
models": ``alpha_orth * OrthogonalityLoss(z)`` makes the latent blocks of each sample
mutually orthogonal, ``alpha_graph * GraphDivergenceLoss(x, decode(N))`` makes images
decoded from Gaussian draws interleave with the data. :func:`latent_regularization` is
the one implementation; :class:`LatentRegularizerMixin` adds it to a skorch net's loss
and :class:`~geolearn.disentanglement.DisentangledAttributeAutoencoder` to its objective.
"""

import torch
from skorch.utils import to_tensor

from ..models._internal import unwrap_module
from ._graph_divergence import GraphDivergenceLoss
from ._orthogonality import OrthogonalityLoss


def latent_regularization(module, x, *, alpha_orth=0.0, alpha_graph=0.0, n_blocks=None,
                          graph_lambda=0.1, graph_distance_scale=None, orth_norm="fro",
                          graph_space="data", output_activation="identity", z=None):
    """``alpha_orth L_orth(z) + alpha_graph L_stat``, and its parts (detached).

    Parameters
    ----------
    module : torch.nn.Module
        With ``encode(x)`` (a tensor, or a tuple whose first element is the code, e.g. a
        VAE's posterior mean) and ``decode(z)``.
    x : torch.Tensor of shape (B, ...)
        The batch.
    alpha_orth, alpha_graph : float, default=0.0
        Weights; a zero weight skips its term (no extra forward pass).
    n_blocks : int, default=None
        Latent blocks of the orthogonality loss (needed when ``alpha_orth > 0``).
    graph_lambda : float, default=0.1
        Temperature of the graph statistic.
    graph_distance_scale : {None, "median"}, default=None
    orth_norm : {"fro", "fro_squared", "spectral"}, default="fro"
    graph_space : {"data", "latent"}, default="data"
        "data" compares ``x`` with ``decode(N)`` (the paper's Eq. 6); "latent" compares
        the codes with ``N``.
    output_activation : {"identity", "sigmoid"}, default="identity"
        Applied to ``decode(N)``: "sigmoid" for decoders that return logits.
    z : torch.Tensor, default=None
        The codes of ``x`` when the caller has them already.

    Returns
    -------
    penalty : torch.Tensor (scalar)
    parts : dict with ``"orth"`` and ``"stat"`` (``L_orth`` batch mean and ``L_stat = -t``)

    Examples
    --------
    >>> import torch
    >>> from geolearn.disentanglement import latent_regularization
    >>> class AE(torch.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.encode, self.decode = torch.nn.Linear(6, 4), torch.nn.Linear(4, 6)
    >>> penalty, parts = latent_regularization(AE(), torch.randn(16, 6), alpha_orth=0.5,
    ...                                        n_blocks=2)
    >>> penalty.ndim, sorted(parts), bool(torch.isclose(penalty, 0.5 * parts["orth"]))
    (0, ['orth'], True)
    """
    penalty, parts = x.new_zeros(()), {}
    if not (alpha_orth or alpha_graph):
        return penalty, parts
    if z is None:
        z = module.encode(x)
        z = z[0] if isinstance(z, tuple) else z
    if alpha_orth:
        orth = OrthogonalityLoss(n_blocks=n_blocks, norm=orth_norm)(z)
        penalty = penalty + alpha_orth * orth
        parts["orth"] = orth.detach()
    if alpha_graph:
        noise = torch.randn(len(x), z.shape[1], device=z.device, dtype=z.dtype)
        if graph_space == "latent":
            target, model = z, noise
        else:
            model = module.decode(noise)
            model = torch.sigmoid(model) if output_activation == "sigmoid" else model
            target = x
        stat = GraphDivergenceLoss(lambda_=graph_lambda, distance_scale=graph_distance_scale)(
            target.reshape(len(target), -1), model.reshape(len(model), -1))
        penalty = penalty + alpha_graph * stat
        parts["stat"] = stat.detach()
    return penalty, parts


class LatentRegularizerMixin:
    """Adds the latent regularisers to the training loss of a skorch autoencoder net.

    Put it before the net class (``class Net(LatentRegularizerMixin, ObjectiveNet)``);
    its ``get_loss`` adds :func:`latent_regularization` of the batch to the net's own
    loss in training. The module must have ``encode(x)`` and ``decode(z)``, as the
    geolearn autoencoders' modules do. A geolearn estimator trains with such a net
    through its ``net_class``, e.g. a GridVAE with orthogonal latent blocks::

        class OrthogonalGridVAE(GridVAE):
            net_class = functools.partial(type("Net", (LatentRegularizerMixin, ObjectiveNet), {}),
                                          alpha_orth=0.1, n_latent_blocks=2)

    Parameters
    ----------
    alpha_orth, alpha_graph : float, default=0.0
    n_latent_blocks : int, default=None
        Needed when ``alpha_orth > 0``.
    graph_lambda : float, default=0.1
    output_activation : {"auto", "identity", "sigmoid"}, default="auto"
        Applied to the decoded draws of the graph term. "auto" reads the net's
        objective, as the geolearn VAEs' nets carry it: a sigmoid for a Bernoulli
        likelihood (``decode`` returns logits) or a sigmoid output, else none.
    *args, **kwargs
        The net's own arguments.

    Examples
    --------
    >>> import torch
    >>> from geolearn.disentanglement import LatentRegularizerMixin
    >>> from geolearn.models import ObjectiveNet
    >>> class AE(torch.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.encode, self.decode = torch.nn.Linear(6, 4), torch.nn.Linear(4, 6)
    ...     def forward(self, x):
    ...         return self.decode(self.encode(x))
    >>> def mse(module, x_hat, X, y, epoch):
    ...     return ((x_hat - X) ** 2).mean(), {}
    >>> Net = type("Net", (LatentRegularizerMixin, ObjectiveNet), {})
    >>> net = Net(AE, objective=mse, alpha_orth=0.1, n_latent_blocks=2, max_epochs=2,
    ...           train_split=None, verbose=0).fit(torch.randn(16, 6), torch.zeros(16))
    >>> "orth" in net.history[-1, "batches", -1]  # the penalty is recorded per batch
    True
    """

    def __init__(self, *args, alpha_orth=0.0, alpha_graph=0.0, n_latent_blocks=None,
                 graph_lambda=0.1, output_activation="auto", **kwargs):
        super().__init__(*args, **kwargs)
        self.alpha_orth = alpha_orth
        self.alpha_graph = alpha_graph
        self.n_latent_blocks = n_latent_blocks
        self.graph_lambda = graph_lambda
        self.output_activation = output_activation

    def get_loss(self, y_pred, y_true, X=None, training=False):
        loss = super().get_loss(y_pred, y_true, X=X, training=training)
        if not training:
            return loss
        penalty, parts = latent_regularization(
            unwrap_module(self.module_), to_tensor(X, device=self.device), alpha_orth=self.alpha_orth,
            alpha_graph=self.alpha_graph, n_blocks=self.n_latent_blocks,
            graph_lambda=self.graph_lambda, output_activation=self._output_activation())
        for name, value in parts.items():  # floats at the epoch's end (ObjectiveNet)
            self.history.record_batch(name, value.detach())
        return loss + penalty

    def _output_activation(self):
        if self.output_activation != "auto":
            return self.output_activation
        objective = getattr(self, "objective", None)
        sigmoid = (getattr(objective, "likelihood", None) == "bernoulli"
                   or getattr(objective, "output_activation", None) == "sigmoid")
        return "sigmoid" if sigmoid else "identity"
