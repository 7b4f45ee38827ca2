"""Finite groups acting on image batches: 4-fold rotations, cyclic x-translations, user groups."""

import numpy as np
import torch

from .._utils import warn_user
from ..exceptions import GeolearnWarning

MAX_ORDER = 64


class _Rot90:
    """Rotation by ``k * 90`` degrees about the image centre (last two axes)."""

    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        if isinstance(x, torch.Tensor):
            return torch.rot90(x, self.k, dims=(-2, -1))
        return np.rot90(x, self.k, axes=(-2, -1))

    def __repr__(self):
        return f"rot90(k={self.k})"


class _XShift:
    """Cyclic translation by ``shift`` pixels along the horizontal (last) axis."""

    def __init__(self, shift):
        self.shift = shift

    def __call__(self, x):
        if isinstance(x, torch.Tensor):
            return torch.roll(x, self.shift, dims=-1)
        return np.roll(x, self.shift, axis=-1)

    def __repr__(self):
        return f"xshift({self.shift})"


class FiniteGroup:
    """A finite group acting on image batches ``(N, C, H, W)``.

    The elements are callables mapping a batch to a batch of the same shape
    (torch tensors; the built-in groups also accept numpy arrays). The group is
    checked against an image shape when an estimator or metric uses it: the
    identity and each element's inverse are found on a random probe image, and
    optionally closure under composition (Section 3.1 of the spec).

    Parameters
    ----------
    transforms : sequence of callables
        The group elements, identity included.
    inverses : sequence of callables, optional
        ``inverses[i]`` undoes ``transforms[i]``. Default: found among
        ``transforms`` by composition.
    name : str, optional
        Shown in ``repr`` and reports.

    Attributes
    ----------
    order : int
        Number of elements ``|G|``.
    identity_index : int or None
        Index of the identity, set by :meth:`check`.

    See Also
    --------
    FiniteGroup.rot4 : 4-fold rotations ``R^2_4``.
    FiniteGroup.xtrans3 : 3-fold cyclic x-translations ``T^2_3``.

    Examples
    --------
    >>> import torch
    >>> from geolearn.invariance import FiniteGroup
    >>> flip = FiniteGroup([lambda x: x, lambda x: x.flip(-1)], name="flip-lr")
    >>> checked = flip.check((1, 4, 4))
    >>> checked.order, checked.identity_index, flip.identity_index is None
    (2, 0, True)
    >>> G = FiniteGroup.rot4()
    >>> x = torch.arange(4.0).reshape(1, 1, 2, 2)
    >>> torch.equal(G.inverse(1)(G[1](x)), x)
    True
    """

    def __init__(self, transforms, inverses=None, name=None):
        self.transforms = list(transforms)
        self.inverses = None if inverses is None else list(inverses)
        self.name = name
        self.identity_index = None

    @classmethod
    def rot4(cls):
        """Rotations by ``k * 90`` degrees, ``k = 0..3`` (needs square images)."""
        return cls([_Rot90(k) for k in range(4)], [_Rot90(-k % 4) for k in range(4)],
                   name="rot4")

    @classmethod
    def xtrans3(cls, width):
        """Cyclic translations by ``k * width / 3`` pixels along x, ``k = 0, 1, 2``."""
        if width % 3:
            raise ValueError(
                f"group='xtrans3' shifts by thirds of the width, but the images are {width} "
                "pixels wide; zero-pad them to a multiple of 3 (e.g. with "
                "geolearn.datasets.make_transforming_mnist(image_size=...))."
            )
        step = width // 3
        return cls([_XShift(k * step) for k in range(3)], [_XShift(-k * step) for k in range(3)],
                   name="xtrans3")

    @property
    def order(self):
        return len(self.transforms)

    def __len__(self):
        return len(self.transforms)

    def __getitem__(self, i):
        return self.transforms[i]

    def inverse(self, i):
        """The inverse of element ``i`` (after :meth:`check`, or when given explicitly)."""
        if self.inverses is None:
            raise RuntimeError("call check(image_shape) first to find the inverses.")
        return self.inverses[i]

    @property
    def non_identity(self):
        """Indices of ``G' = G \\ {e}``."""
        if self.identity_index is None:
            raise RuntimeError("call check(image_shape) first to find the identity.")
        return [i for i in range(self.order) if i != self.identity_index]

    def __repr__(self):
        return f"FiniteGroup(name={self.name!r}, order={self.order})"

    def apply_random(self, x, generator=None):
        """Apply an independent uniformly drawn element to each sample of ``x``.

        Returns ``(gx, index)``. Costs ``|G|`` calls (samples grouped by element).
        """
        idx = torch.randint(self.order, (len(x),), generator=generator)
        out = x.clone()
        for k in range(self.order):
            # rows picked on the CPU, moved as indices: no device sync (as a mask would need)
            rows = (idx == k).nonzero().squeeze(1)
            if k != self.identity_index and len(rows):
                rows = rows.to(x.device)
                out[rows] = self.transforms[k](x[rows])
        return out, idx

    def check(self, image_shape, *, check_group=False, random_state=0):
        """Validate the group on images of ``image_shape`` and return a checked copy.

        Finds the identity and each element's inverse on a random probe
        ``x0 ~ N(0, 1)`` of shape ``(1, *image_shape)`` in float64; with
        ``check_group=True`` also checks closure (``|G|^2`` evaluations).
        Warns when an element does not preserve the norm of ``x0``.

        Parameters
        ----------
        image_shape : tuple of int
            ``(C, H, W)`` (or ``(H, W)``).
        check_group : bool, default=False
        random_state : int, default=0
            Seed of the probe.

        Returns
        -------
        group : FiniteGroup
            A new instance with ``identity_index`` and ``inverses`` set.
        """
        image_shape = tuple(image_shape)
        if len(image_shape) == 2:
            image_shape = (1, *image_shape)
        if not 1 <= self.order <= MAX_ORDER:
            raise ValueError(
                f"group must have between 1 and {MAX_ORDER} elements; got {self.order}."
            )
        if not all(callable(t) for t in self.transforms):
            raise TypeError("group elements must be callables mapping (N, C, H, W) tensors.")
        gen = torch.Generator().manual_seed(random_state)
        x0 = torch.randn((1, *image_shape), generator=gen, dtype=torch.float64)
        images = self._orbit(x0)
        tol = 1e-6 * float(x0.norm())
        identity = _index_of(images, x0, tol)
        if identity is None:
            raise ValueError(f"group {self!r} has no identity element: include lambda x: x.")
        inverses = self._check_inverses(images, x0, tol)
        if check_group:
            self._check_closure(images, tol)
        checked = FiniteGroup(self.transforms, inverses, name=self.name)
        checked.identity_index = identity
        return checked

    def _orbit(self, x0):
        """Every element applied to the probe ``x0``, in float64; checks shapes and norms."""
        norm = float(x0.norm())
        images = []
        for i, t in enumerate(self.transforms):
            gx = torch.as_tensor(t(x0))
            if gx.shape != x0.shape:
                raise ValueError(
                    f"group element {i} ({t!r}) changes the image shape from "
                    f"{tuple(x0.shape[1:])} to {tuple(gx.shape[1:])}."
                )
            images.append(gx.to(torch.float64))
        if any(abs(float(g.norm()) - norm) > 1e-6 * norm for g in images):
            warn_user(f"{self!r} has elements that do not preserve the norm of images (not a pixel "
            "permutation): saliency invariance is no longer exactly 1 for weight-tied "
            "models and Proposition 3.1 does not apply.", GeolearnWarning)
        return images

    def _check_inverses(self, images, x0, tol):
        """The given inverses checked on the probe, or each element's inverse found."""
        if self.inverses is None:
            inverses = []
            for i, t in enumerate(self.transforms):
                j = next((j for j, s in enumerate(self.transforms)
                          if float((torch.as_tensor(s(images[i])) - x0).norm()) <= tol), None)
                if j is None:
                    raise ValueError(
                        f"group element {i} ({t!r}) has no inverse among the elements: the "
                        "list is not closed under composition."
                    )
                inverses.append(self.transforms[j])
            return inverses
        if len(self.inverses) != self.order:
            raise ValueError(f"inverses has {len(self.inverses)} callables but the group has "
                             f"{self.order} elements.")
        for i, inv in enumerate(self.inverses):
            if float((torch.as_tensor(inv(images[i])) - x0).norm()) > tol:
                raise ValueError(f"inverses[{i}] does not undo group element {i}.")
        return self.inverses

    def _check_closure(self, images, tol):
        """Raise unless every composition of two elements is an element (on the probe)."""
        for i, a in enumerate(self.transforms):
            for j in range(self.order):
                ab = torch.as_tensor(a(images[j])).to(torch.float64)
                if _index_of(images, ab, tol) is None:
                    raise ValueError(
                        f"group {self!r} is not closed: element {i} composed with element "
                        f"{j} is not an element."
                    )


def _index_of(images, y, tol):
    """Index of the first of ``images`` within ``tol`` of ``y`` (Euclidean norm), else None."""
    for j, g in enumerate(images):
        if float((g - y).norm()) <= tol:
            return j
    return None


def resolve_group(group, image_shape, *, check_group=False):
    """Turn a ``group`` parameter into a checked :class:`FiniteGroup` for ``image_shape``.

    ``group`` is ``"rot4"``, ``"xtrans3"``, a :class:`FiniteGroup` or a list
    of callables; ``image_shape`` is ``(C, H, W)``.
    """
    _, H, W = image_shape
    if isinstance(group, str):
        if group == "rot4":
            if H != W:
                raise ValueError(
                    f"group='rot4' rotates square images, but the images are {H}x{W}; pass "
                    "image_shape=(C, H, W) for flat X, or zero-pad to a square."
                )
            group = FiniteGroup.rot4()
        elif group == "xtrans3":
            group = FiniteGroup.xtrans3(W)
        else:
            raise ValueError(
                f"group must be 'rot4', 'xtrans3', a FiniteGroup or a list of callables; "
                f"got {group!r}."
            )
    elif not isinstance(group, FiniteGroup):
        if callable(group) or not hasattr(group, "__iter__"):
            raise TypeError(
                "group must be 'rot4', 'xtrans3', a FiniteGroup or a list of callables; got "
                f"{type(group).__name__}."
            )
        group = FiniteGroup(group)
    return group.check(image_shape, check_group=check_group)
