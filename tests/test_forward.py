"""Forward values: every dtype and variant against float64 and mpmath references, F.gelu where it
is accurate, golden values from the literature, and non-finite and huge inputs."""

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import (FLOAT_DTYPES, FORWARD_ULPS, HALF_DTYPES, all_values, assert_ulps,
                      binade_samples, single_path_edges_f64)

import gelu_ext
from gelu_ext.reference import mp_reference, torch_reference, ulp


def float32_inputs():
    """Every binade of both signs, a dense grid over the transition, and the negative tail down
    to where the results underflow to zero."""
    return torch.cat([
        binade_samples(torch.float32, per_binade=32),
        torch.linspace(-8, 8, 20001, dtype=torch.float32),
        torch.linspace(-70, -5, 20001, dtype=torch.float32),
    ])


@pytest.mark.parametrize("dtype", [torch.float32, *HALF_DTYPES])
def test_forward_against_float64(device, approximate, dtype):
    x = all_values(dtype) if dtype in HALF_DTYPES else float32_inputs()
    x = x[x.isfinite()]
    y = gelu_ext.gelu(x.to(device), approximate).cpu()
    ref, _, _ = torch_reference(x, approximate)
    assert y.dtype == dtype
    assert_ulps(y, ref, FORWARD_ULPS[dtype], f"{dtype} {approximate}", x)


def test_forward_float64_against_mpmath(device, approximate):
    x = torch.cat([
        binade_samples(torch.float64, per_binade=1)[::8],
        torch.linspace(-40, 10, 401, dtype=torch.float64),
        single_path_edges_f64(),
    ])
    x = x[x.abs() < 1e300]  # beyond, f(x) is trivially x or -0; tested below
    y = gelu_ext.gelu(x.to(device), approximate).cpu()
    ref = torch.tensor([float(mp_reference(v, approximate)[0]) for v in x.tolist()],
                       dtype=torch.float64)
    assert_ulps(y, ref, FORWARD_ULPS[torch.float64], f"float64 {approximate}", x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_matches_f_gelu_where_f_gelu_is_accurate(device, dtype, approximate):
    # Above x = -1, F.gelu's 1 + erf(.) or 1 + tanh(.) loses at most a factor 3 to cancellation.
    # F.gelu runs in float64 here: its float32 kernels are less accurate on some CPUs (up to 4.7
    # ulps near x = -0.9 in ATen's AVX2 erf, on an AMD EPYC), and this checks the function, not them.
    x = torch.linspace(-1, 8, 100001, dtype=dtype, device=device)
    y = gelu_ext.gelu(x, approximate)
    expected = F.gelu(x.double(), approximate=approximate)
    tol = ulp(expected.double().cpu(), dtype).to(device) * 4
    assert ((y.double() - expected.double()).abs() <= tol).all()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_golden_values(device, dtype):
    # GELU(x) = x Phi(x): standard values quoted in the literature.
    golden = {-2.0: -0.0455, -1.0: -0.1587, 0.0: 0.0, 1.0: 0.8413, 2.0: 1.9545}
    x = torch.tensor(list(golden), dtype=dtype, device=device)
    expected = torch.tensor(list(golden.values()), dtype=torch.float64)
    tol = 5e-5 if dtype in (torch.float32, torch.float64) else 1e-2
    assert torch.allclose(gelu_ext.gelu(x).double().cpu(), expected, atol=tol, rtol=0)


def test_minimum(device):
    # GELU has its minimum -0.16997 at x = -0.7518, where its derivative crosses zero.
    x = torch.linspace(-0.8, -0.7, 100001, dtype=torch.float64, device=device)
    y = gelu_ext.gelu(x)
    i = int(y.argmin())
    assert abs(x[i].item() - (-0.7518)) < 1e-4
    assert abs(y[i].item() - (-0.16997)) < 1e-5
    grad = torch.ops.gelu_ext.gelu_backward(torch.ones(2, dtype=torch.float64, device=device),
                                            x[[i - 100, i + 100]])
    assert grad[0] < 0 < grad[1]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_non_finite(device, approximate, dtype):
    x = torch.tensor([math.inf, -math.inf, math.nan], dtype=dtype, device=device)
    y = gelu_ext.gelu(x, approximate).cpu()
    assert y[0] == math.inf
    assert y[1] == 0 and torch.signbit(y[1]), "gelu(-inf) must be -0"
    assert y[2].isnan()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_signed_zeros(device, approximate, dtype):
    # gelu(±0) = ±0 · Φ(0): the sign survives, as it does in F.gelu. Surrounded by ordinary
    # inputs, so that the zeros take the vector paths with their neighbours.
    x = torch.tensor([0.5, 0.0, -0.0, -1.0] * 8, dtype=dtype, device=device)
    y = gelu_ext.gelu(x, approximate).cpu()
    assert (y[1::4] == 0).all() and not torch.signbit(y[1::4]).any(), y[1::4].tolist()
    assert (y[2::4] == 0).all() and torch.signbit(y[2::4]).all(), y[2::4].tolist()


def test_tiny_float32_inputs_correctly_rounded(device, approximate):
    # Below 2^-125 in magnitude f = x/2 (plus far less than an ulp) rounds into the subnormals,
    # where half the inputs are ties, which an ulp bound cannot tell apart: each result must be
    # the float64 reference rounded once. Mixed with ordinary inputs, so that they share vectors.
    tiny = torch.arange(0, 1 << 25, 13, dtype=torch.int32).view(torch.float32)
    x = torch.stack([tiny, -tiny, torch.full_like(tiny, 0.75), torch.full_like(tiny, -3.0)], 1)
    y = gelu_ext.gelu(x.to(device), approximate).cpu()[:, :2]
    ref, _, _ = torch_reference(x[:, :2].double(), approximate)
    wrong = y != ref.float()
    assert not wrong.any(), (f"{int(wrong.sum())} tiny inputs misrounded, e.g. x = "
                             f"{x[:, :2][wrong][:3].tolist()}: {y[wrong][:3].tolist()} instead of "
                             f"{ref.float()[wrong][:3].tolist()}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_huge_inputs_do_not_overflow(device, approximate, dtype):
    # No intermediate may overflow while the result is finite: x^3, or x * (...) near the maximum.
    big = torch.finfo(dtype).max
    x = torch.tensor([big, big / 2, big ** 0.5, big ** (1 / 3) * 2, 1e4], dtype=torch.float64)
    x = x.to(dtype).to(device)
    y = gelu_ext.gelu(x, approximate)
    assert torch.equal(y, x), f"gelu(x) must be x for large x, got {y.tolist()} for {x.tolist()}"
    y = gelu_ext.gelu(-x, approximate).cpu()
    assert (y == 0).all() and torch.signbit(y).all(), f"gelu(-huge) must be -0, got {y.tolist()}"


def test_tail_is_not_flushed_to_zero(device):
    # F.gelu returns -0 below x = -5.54 in float32; the true value is a normal float to x = -13.15
    # and a nonzero subnormal down to x = -14.36.
    x = torch.tensor([-6.0, -10.0, -13.0, -14.0], device=device)
    y = gelu_ext.gelu(x).cpu()
    assert (y < 0).all(), y.tolist()
    ref, _, _ = torch_reference(x.cpu())
    assert_ulps(y, ref, FORWARD_ULPS[torch.float32], "float32 tail", x.cpu())
