"""Chunks and threads of the sampler and of ``deform``: a row's result depends only on that row.

The fields and the deformation run over cache-sized chunks of rows, on ``n_jobs`` threads.
Regressions guarded here: fields computed by a GEMM per chunk rounded a row differently by
the size and the offset of its chunk (BLAS kernels differ by matrix shape), so the same
field drawn in a batch of 5 or of 100 differed in its last bits; and the Gaussian kernel's
normaliser, a torch sum over its taps, rounded the last pixels of a chunk differently (its
vectorised loop and its scalar tail add in different orders), so in float32 with ``n * n`` odd
the last image of a chunk differed from the same image alone. ``max_xi`` and the Xi check
of the samplers (batched GEMMs) had the first defect too.
"""

from unittest import mock

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from geolearn._utils import resolve_n_jobs
from geolearn.diffeo import _sampler, deform, max_xi, sample_displacement_fields


def _chunk_pixels(pixels):
    """Run a block with chunks of ``pixels`` pixels (small: many chunks on a small input)."""
    return mock.patch.object(_sampler, "_CPU_CHUNK", pixels)


def _images(N, C, n, dtype, seed=0):
    return np.random.default_rng(seed).random((N, C, n, n)).astype(dtype)


@settings(max_examples=25, deadline=None)
@given(size=st.integers(1, 40), chunk=st.sampled_from([1, 2**7, 2**9, 2**11]),
       n_jobs=st.sampled_from([None, 1, 2, -1]), n=st.integers(5, 13))
def test_fields_do_not_depend_on_chunks_threads_or_batch(size, chunk, n_jobs, n):
    c = min(3, n - 2)
    with _chunk_pixels(2**20):  # one chunk: the reference
        ref = sample_displacement_fields(n, 0.01, c, size=40, random_state=7)
    with _chunk_pixels(chunk):
        d = sample_displacement_fields(n, 0.01, c, size=size, random_state=7, n_jobs=n_jobs)
    # the first draws of a larger batch are the same normals: the same fields, to the bit
    assert torch.equal(d, ref[:size])


@pytest.mark.parametrize("interp", ["bilinear", "gaussian"])
@settings(max_examples=25, deadline=None)
@given(rows=st.lists(st.integers(0, 29), min_size=1, max_size=30),
       chunk=st.sampled_from([1, 2**8, 2**10]), n_jobs=st.sampled_from([None, 2, -1]),
       dtype=st.sampled_from([np.float32, np.float64]), C=st.integers(1, 3),
       n=st.integers(5, 13))
def test_rows_do_not_depend_on_chunks_threads_or_batch(interp, rows, chunk, n_jobs, dtype, C, n):
    X = _images(30, C, n, dtype)
    d = sample_displacement_fields(n, 0.05, 3, size=30, random_state=0)
    with _chunk_pixels(2**20):
        ref = deform(X, d, interp=interp)
    with _chunk_pixels(chunk):
        out = deform(X[rows], d[rows], interp=interp, n_jobs=n_jobs)
    assert out.dtype == dtype
    assert np.array_equal(out, ref[rows])


def test_gaussian_last_image_of_a_chunk_equals_the_image_alone():
    # the defect's case: float32, 3 channels, n = 17 (n * n odd), chunks of 151 images
    X = _images(300, 3, 17, np.float32)
    d = sample_displacement_fields(17, 0.01, 3, size=300, random_state=0)
    batch = deform(X, d, interp="gaussian")
    for i in (150, 299):  # the last image of each chunk
        assert np.array_equal(deform(X[i:i + 1], d[i:i + 1], interp="gaussian"), batch[i:i + 1])


@pytest.mark.parametrize("interp", ["bilinear", "gaussian"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_n_jobs_gives_the_same_bits_on_many_chunks(interp, dtype):
    X = _images(700, 1, 16, dtype)
    d = sample_displacement_fields(16, 0.01, 3, size=700, random_state=0)
    with _chunk_pixels(2**10):  # 4 images a chunk: 175 chunks, 44 tasks
        assert torch.equal(d, sample_displacement_fields(16, 0.01, 3, size=700, random_state=0,
                                                         n_jobs=2))
        one = deform(X, d, interp=interp, n_jobs=1)
        assert np.array_equal(one, deform(X, d, interp=interp, n_jobs=2))
    assert np.array_equal(one, deform(X, d, interp=interp))  # default chunks


def test_n_jobs_reaches_the_pool(monkeypatch):
    seen = []
    original = _sampler.thread_map

    def recording(fn, items, n_jobs=None, **kwargs):
        seen.append(n_jobs)
        return original(fn, items, n_jobs, **kwargs)

    monkeypatch.setattr(_sampler, "thread_map", recording)
    d = sample_displacement_fields(8, 0.01, 3, size=4, random_state=0, n_jobs=-1)
    deform(np.zeros((4, 8, 8)), d, n_jobs=3)
    deform(np.zeros((4, 8, 8)), d)
    assert seen == [resolve_n_jobs(-1), 3, 1]  # None: 1 outside a parallel_config


@pytest.mark.parametrize("n_jobs, error", [(0, ValueError), (1.5, TypeError), ("2", TypeError),
                                           (True, TypeError), (np.float64(2.0), TypeError)])
def test_bad_n_jobs_raise(n_jobs, error):
    with pytest.raises(error, match="n_jobs must be None or"):
        sample_displacement_fields(8, 0.01, 3, size=2, n_jobs=n_jobs)
    with pytest.raises(error, match="n_jobs must be None or"):
        deform(np.zeros((2, 8, 8)), np.zeros((2, 2, 8, 8)), n_jobs=n_jobs)


def test_non_finite_fields_raise_whatever_the_chunk():
    X = np.zeros((300, 8, 8))
    for bad in (np.nan, np.inf, -np.inf):
        d = np.zeros((300, 2, 8, 8))
        d[257, 1, 3, 4] = bad  # in a late chunk, on a worker thread
        for n_jobs in (1, 2):
            with _chunk_pixels(2**8), pytest.raises(ValueError, match="NaN or infinity"):
                deform(X, d, n_jobs=n_jobs)


@pytest.mark.parametrize("interp", ["bilinear", "gaussian"])
def test_deform_stays_differentiable(interp):
    # the threaded path writes into its output (out=), which autograd refuses: inputs that
    # require grad take the chunks in order, with the same values
    X = torch.rand(2, 1, 6, 6, dtype=torch.float64, requires_grad=True)
    d = sample_displacement_fields(6, 0.01, 3, size=2, random_state=0) + 0.3  # off the grid
    d.requires_grad_(True)
    with _chunk_pixels(36):  # one image a chunk
        assert torch.autograd.gradcheck(lambda X, d: deform(X, d, interp=interp, n_jobs=2),
                                        (X, d))
        out = deform(X, d, interp=interp)
        assert out.requires_grad
        assert torch.equal(out.detach(), deform(X.detach(), d.detach(), interp=interp, n_jobs=2))


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(st.integers(0, 59), min_size=1, max_size=60), n=st.integers(5, 20),
       c=st.integers(1, 3))
def test_max_xi_rows_do_not_depend_on_the_batch(rows, n, c):
    d = sample_displacement_fields(n, 0.01, min(c, n - 2), size=60, random_state=0)
    assert np.array_equal(max_xi(d[rows]), max_xi(d)[rows])


def test_max_xi_of_the_defects_case_equals_the_field_alone():
    # Xi was computed by batched GEMMs, which rounded a field differently by the batch it sat
    # in: at n = 17, c = 5 some fields differed in their last bit alone and in a batch of 300
    d = sample_displacement_fields(17, 0.01, 5, size=300, random_state=0)
    batch = max_xi(d)
    assert all(max_xi(d[i:i + 1])[0] == batch[i] for i in range(300))


@pytest.mark.parametrize("n, c", [(28, 3), (17, 5), (8, 2)])
def test_max_xi_equals_the_plain_expression_bit_for_bit(n, c):
    # Xi runs in place and halves after the max: the same roundings as the plain formula
    coeffs = _sampler._coefficients(np.random.default_rng(n).standard_normal((300, 2, c, c)),
                                    0.02, c)
    S, dS = _sampler._sine_tables(n, c, coeffs.device, coeffs.dtype)
    d_du = n / (n - 1) * _sampler._sandwich(coeffs, S, dS)
    d_dv = n / (n - 1) * _sampler._sandwich(coeffs, dS, S)
    j11, j12, j21, j22 = d_du[:, 0], d_dv[:, 0], d_du[:, 1], d_dv[:, 1]
    xi = 0.5 * (j11 + j22 + torch.sqrt((j11 - j22) ** 2 + (j12 + j21) ** 2))
    assert torch.equal(_sampler._max_xi_from_coefficients(coeffs, n), xi.flatten(1).amax(1))
