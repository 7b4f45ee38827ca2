"""Whole-batch tensor data for skorch's training loop.

:class:`TensorDataset` indexes a batch in one call; :class:`TensorBatches` is the
iterator a geolearn net uses over one in place of a ``DataLoader``: the same batches
in the same order from the same random draws, without the per-row sampler.
"""

import torch


class TensorDataset(torch.utils.data.Dataset):
    """Rows of a tensor ``X`` (and ``y``), fetched a whole batch at a time.

    ``__getitems__`` lets the DataLoader index the batch in one call instead of
    collating ``batch_size`` single rows, which dominates the step time of small
    networks. Use it with ``iterator_train__collate_fn=collate_batch``.

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, ...)
        The inputs.
    y : torch.Tensor of shape (n_samples, ...), optional
        The targets; without them a batch's ``y`` is an empty ``(n, 0)`` tensor.
    sample_weight : torch.Tensor of shape (n_samples,), optional
        Per-sample weights: a batch's ``y`` is then the pair ``(y, sample_weight)``,
        which ``geolearn.models._internal.FunctionalCriterion`` turns into a weighted mean of the
        per-sample losses.

    Examples
    --------
    >>> import torch
    >>> from geolearn._utils import TensorDataset
    >>> ds = TensorDataset(torch.arange(6.0).reshape(3, 2), torch.tensor([0, 1, 0]))
    >>> X, y = ds.__getitems__([2, 0])
    >>> X.tolist(), y.tolist(), len(ds)
    ([[4.0, 5.0], [0.0, 1.0]], [0, 0], 3)
    """

    def __init__(self, X, y=None, sample_weight=None):
        self.X = X
        self.y = y
        self.sample_weight = sample_weight

    def __len__(self):
        return len(self.X)

    def __getitem__(self, i):
        return self.__getitems__([i])

    def __getitems__(self, indices):
        idx = torch.as_tensor(indices, dtype=torch.long)
        y = self.y[idx] if self.y is not None else torch.empty(len(idx), 0)
        if self.sample_weight is not None:
            return self.X[idx], (y, self.sample_weight[idx])
        return self.X[idx], y


def collate_batch(batch):
    """Identity collate: :class:`TensorDataset` already returns whole batches.

    Parameters
    ----------
    batch : tuple of torch.Tensor
        ``(X, y)`` as returned by ``TensorDataset.__getitems__``.

    Returns
    -------
    batch : tuple of torch.Tensor
        ``batch`` unchanged.

    Examples
    --------
    >>> import torch
    >>> from torch.utils.data import DataLoader
    >>> from geolearn._utils import TensorDataset, collate_batch
    >>> ds = TensorDataset(torch.zeros(5, 2), torch.ones(5))
    >>> [tuple(X.shape) for X, _ in DataLoader(ds, batch_size=2, collate_fn=collate_batch)]
    [(2, 2), (2, 2), (1, 2)]
    """
    return batch


class TensorBatches:
    """The batches a ``DataLoader`` gives of a :class:`TensorDataset`, each indexed at once.

    What ``DataLoader(dataset, batch_size, shuffle, drop_last, collate_fn=collate_batch)``
    yields, from the same draws of torch's global generator (the loader's base seed,
    then ``RandomSampler``'s seed when shuffling) and so in the same order, without
    its per-row sampler and index lists (tens of microseconds a batch). Each pass
    draws a new order, as the loader does.

    Parameters
    ----------
    dataset : TensorDataset
    batch_size : int
    shuffle : bool, default=False
    drop_last : bool, default=False

    Examples
    --------
    >>> import torch
    >>> from torch.utils.data import DataLoader
    >>> from geolearn._utils import TensorBatches, TensorDataset, collate_batch
    >>> ds = TensorDataset(torch.arange(10.0)[:, None])
    >>> _ = torch.manual_seed(0)
    >>> ours = [X.flatten().tolist() for X, _ in TensorBatches(ds, 4, shuffle=True)]
    >>> _ = torch.manual_seed(0)
    >>> loader = DataLoader(ds, batch_size=4, shuffle=True, collate_fn=collate_batch)
    >>> ours == [X.flatten().tolist() for X, _ in loader], len(ours)
    (True, 3)
    """

    def __init__(self, dataset, batch_size, shuffle=False, drop_last=False):
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last

    def __len__(self):
        n, size = len(self.dataset), self.batch_size
        return n // size if self.drop_last else -(-n // size)

    def __iter__(self):
        # the DataLoader iterator's base seed (for its workers), drawn even without any
        torch.empty((), dtype=torch.int64).random_()
        n = len(self.dataset)
        if self.shuffle:  # RandomSampler's own generator, seeded from the global one
            seed = int(torch.empty((), dtype=torch.int64).random_().item())
            order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
        else:
            order = torch.arange(n)
        stop = n - n % self.batch_size if self.drop_last else n
        for start in range(0, stop, self.batch_size):
            yield self.dataset.__getitems__(order[start:start + self.batch_size])
