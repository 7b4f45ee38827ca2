import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from geolearn._utils import (
    check_image_shape,
    check_images,
    iter_batches,
    resolve_device,
    row_generators,
    torch_seed,
)


def test_check_images_folds_flat_rows():
    X = np.arange(2 * 12, dtype=float).reshape(2, 12)
    out = check_images(X, image_shape=(3, 4))
    assert out.shape == (2, 1, 3, 4) and out.dtype == np.float32
    np.testing.assert_array_equal(out.reshape(2, -1), X)
    assert check_images(X.reshape(2, 3, 4)).shape == (2, 1, 3, 4)


def test_check_images_errors_name_the_problem():
    X = np.zeros((2, 12))
    with pytest.raises(ValueError, match="image_shape"):
        check_images(X)
    with pytest.raises(ValueError, match="image_shape.*holds 15"):
        check_images(X, image_shape=(3, 5))
    with pytest.raises(ValueError, match="image_shape"):
        check_images(np.zeros((2, 1, 3, 4)), image_shape=(4, 3))
    with pytest.raises(ValueError, match="ndim=1"):
        check_images(np.zeros(5))
    with pytest.raises(ValueError, match="NaN"):
        check_images(np.full((2, 1, 2, 2), np.nan))


@given(shape=st.one_of(st.just((0, 3)), st.just((2,)), st.just((1, 2, 3, 4)), st.just((2.5, 3)),
                       st.just("ab")))
def test_bad_image_shapes(shape):
    with pytest.raises(ValueError, match="image_shape"):
        check_image_shape(shape)


@given(n=st.integers(0, 50), b=st.integers(1, 60))
def test_iter_batches_cover_exactly_once(n, b):
    idx = np.concatenate([np.arange(n)[sl] for sl in iter_batches(n, b)] or [np.array([], int)])
    np.testing.assert_array_equal(idx, np.arange(n))


def test_resolve_device_and_seed():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type in ("cpu", "cuda")
    with pytest.raises(ValueError, match="device"):
        resolve_device("tpu!")
    state = torch.random.get_rng_state()
    with torch_seed(3):
        a = torch.rand(3)
    with torch_seed(3):
        b = torch.rand(3)
    assert torch.equal(a, b)
    assert torch.equal(state, torch.random.get_rng_state())


def test_torch_seed_blocks_of_threads_do_not_mix():
    """Overlapping blocks drew each other's numbers and left the global RNG changed."""
    import time

    from tests.threads import run_in_threads

    def seeded(seed):
        with torch_seed(seed):
            draws = [torch.rand(3)]
            time.sleep(0.002)  # another thread's block would reseed the generator here
            return torch.cat([*draws, torch.rand(3)]).numpy()

    expected = {s: seeded(s) for s in (1, 2)}
    state = torch.random.get_rng_state()
    results = run_in_threads([(1, lambda: seeded(1)), (2, lambda: seeded(2))], repeats=5)
    for seed, r in results:
        np.testing.assert_array_equal(r, expected[seed])
    assert torch.equal(state, torch.random.get_rng_state())


def test_to_tensor_of_flipped_views_including_one_row():
    """Regression: a one-row view of a flipped array (``X[::-1][:1]``, the last batch of a
    reversed X) kept its negative stride and torch refused it."""
    from geolearn._utils import to_tensor

    X = np.arange(12, dtype=np.float32).reshape(6, 2)[::-1]
    for rows in (X, X[:1], X[5:], np.rot90(X)):
        np.testing.assert_array_equal(to_tensor(rows).numpy(), rows)


def test_to_tensor_of_a_read_only_array_copies_without_a_warning():
    """Defect: torch warned (once a process) that a read-only array was shared, not writable."""
    import warnings

    from geolearn._utils import to_tensor

    X = np.ones((3, 2), np.float32)
    X.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = to_tensor(X)
    t[0, 0] = 5.0
    assert X[0, 0] == 1.0


@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=6),
       st.lists(st.integers(0, 2**40), max_size=3))
def test_row_generators_are_numpys_default_rng_draw_for_draw(keys, stream):
    """The vectorised seeding equals numpy's SeedSequence, for one- and two-word keys."""
    for rng, key in zip(row_generators(keys + [0, 2**32 - 1, 2**32], tuple(stream)),
                        keys + [0, 2**32 - 1, 2**32]):
        expected = np.random.default_rng([key, *stream])
        assert rng.bit_generator.state == expected.bit_generator.state
        np.testing.assert_array_equal(rng.standard_normal(7), expected.standard_normal(7))
