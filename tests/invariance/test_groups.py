import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from geolearn.invariance import FiniteGroup
from geolearn.invariance._groups import resolve_group


def identity(x):
    return x


def rot90(x):
    return torch.rot90(x, 1, dims=(-2, -1))


@pytest.mark.parametrize("name, shape, order", [("rot4", (1, 6, 6), 4), ("xtrans3", (2, 4, 9), 3)])
def test_builtin_groups_find_identity_and_inverses(name, shape, order):
    G = resolve_group(name, shape, check_group=True)
    assert G.order == order and G.identity_index == 0 and G.non_identity == list(range(1, order))
    x = torch.randn(3, *shape, dtype=torch.float64)
    for k in range(order):
        assert torch.equal(G.inverse(k)(G[k](x)), x)
        assert not torch.equal(G[k](x), x) or k == 0


def test_builtin_actions_match_numpy():
    x = np.arange(2 * 36, dtype=float).reshape(2, 1, 6, 6)
    rot, shift = resolve_group("rot4", (1, 6, 6)), resolve_group("xtrans3", (1, 6, 6))
    np.testing.assert_array_equal(rot[1](torch.tensor(x)).numpy(), np.rot90(x, 1, axes=(2, 3)))
    np.testing.assert_array_equal(shift[2](torch.tensor(x)).numpy(), np.roll(x, 4, axis=3))
    np.testing.assert_array_equal(shift[2](x), np.roll(x, 4, axis=3))  # numpy in, numpy out


def test_user_group_inverses_found_by_composition():
    def rot(k):
        return lambda x: torch.rot90(x, k, dims=(-2, -1))

    G = FiniteGroup([rot(2), rot(1), rot(0), rot(3)]).check((1, 5, 5), check_group=True)
    assert G.identity_index == 2
    x = torch.randn(1, 1, 5, 5)
    for k in range(4):
        assert torch.equal(G.inverse(k)(G[k](x)), x)
    # rot(1) and rot(3) are each other's inverse
    assert torch.equal(G.inverse(1)(x), rot(3)(x))


def test_rejects_group_without_identity():
    with pytest.raises(ValueError, match="identity"):
        FiniteGroup([rot90]).check((1, 4, 4))


def test_rejects_unclosed_group():
    with pytest.raises(ValueError, match="closed|inverse"):
        FiniteGroup([identity, rot90]).check((1, 4, 4), check_group=True)


def test_closure_check_catches_what_inverses_do_not():
    # {e, a, a^-1} with a = rot90: inverses exist but a∘a = rot180 is missing
    def rot270(x):
        return torch.rot90(x, 3, dims=(-2, -1))

    FiniteGroup([identity, rot90, rot270]).check((1, 4, 4))
    with pytest.raises(ValueError, match="not closed"):
        FiniteGroup([identity, rot90, rot270]).check((1, 4, 4), check_group=True)


def test_rejects_shape_changing_element():
    with pytest.raises(ValueError, match="shape"):
        FiniteGroup([identity, lambda x: x[..., :-1]]).check((1, 4, 4))


def test_shape_requirements_of_builtin_groups():
    with pytest.raises(ValueError, match="square"):
        resolve_group("rot4", (1, 4, 6))
    with pytest.raises(ValueError, match="pad"):
        resolve_group("xtrans3", (1, 4, 8))
    with pytest.raises(ValueError, match="group must be"):
        resolve_group("rot8", (1, 4, 4))
    with pytest.raises(TypeError, match="group must be"):
        resolve_group(rot90, (1, 4, 4))


def test_order_limit_and_explicit_wrong_inverses():
    with pytest.raises(ValueError, match="between 1 and 64"):
        FiniteGroup([identity] * 65).check((1, 2, 2))
    with pytest.raises(ValueError, match="does not undo"):
        FiniteGroup([identity, rot90], inverses=[identity, rot90]).check((1, 3, 3))


def test_warns_on_non_norm_preserving_elements():
    with pytest.warns(UserWarning, match="norm"):
        with pytest.raises(ValueError):  # x -> 2x has no inverse in the list either
            FiniteGroup([identity, lambda x: 2 * x]).check((1, 3, 3))


def test_apply_random_is_per_sample_and_reproducible():
    G = resolve_group("rot4", (1, 5, 5))
    x = torch.randn(64, 1, 5, 5)
    gx, idx = G.apply_random(x, torch.Generator().manual_seed(0))
    for i in range(64):
        assert torch.equal(gx[i], G[int(idx[i])](x[i]))
    assert len(set(idx.tolist())) == 4
    gx2, idx2 = G.apply_random(x, torch.Generator().manual_seed(0))
    assert torch.equal(gx, gx2) and torch.equal(idx, idx2)


class _Shift:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return torch.roll(x, self.k, dims=-1)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(1, 3), st.randoms(use_true_random=False))
def test_check_finds_identity_and_inverses_of_any_listing_of_a_cyclic_group(order, step, rnd):
    """Property: the elements of x-shifts by multiples of ``step`` on ``order * step`` wide
    images, listed in any order, give the identity's index, true inverses and closure."""
    shifts = list(range(order))
    rnd.shuffle(shifts)
    G = FiniteGroup([_Shift(k * step) for k in shifts]).check((2, 3, order * step),
                                                             check_group=True)
    assert shifts[G.identity_index] == 0
    x = torch.randn(2, 2, 3, order * step, dtype=torch.float64)
    for i in range(order):
        assert torch.equal(G.inverse(i)(G[i](x)), x)
    assert sorted(G.non_identity) == [i for i in range(order) if shifts[i] != 0]
    if order > 2:
        with pytest.raises(ValueError, match="not closed|no inverse"):
            FiniteGroup([_Shift(k * step) for k in shifts if k != 1]).check(
                (1, 2, order * step), check_group=True)
