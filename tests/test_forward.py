"""Forward values: every dtype and variant against float64 and mpmath references, F.gelu where it
is accurate, golden values from the literature, and non-finite and huge inputs."""

import functools
import math

import mpmath as mp
import pytest
import torch
import torch.nn.functional as F
from conftest import (FIRST_DERIVATIVE_ULPS, FLOAT_DTYPES, FORWARD_ULPS, HALF_DTYPES,
                      REFERENCE_ACCURACY, SECOND_DERIVATIVE_ULPS, TINY_INPUT, MpValues, all_values,
                      assert_correctly_rounded, assert_ulps, assert_within, binade_samples,
                      mp_exact, single_path_edges_f64)

import gelu_ext
from gelu_ext.reference import reference_and_scales, torch_reference, ulp

ops = torch.ops.gelu_ext


@functools.lru_cache(maxsize=1)
def float32_sweep():
    """About 2^22 float32 inputs: 4096 random ones in every binade of both signs (subnormals
    included), 2^21 uniform over [-72, 12] (every form's transition, and the negative tails to
    where f underflows to zero), and a grid of 200,001 over [-8, 8]."""
    g = torch.Generator().manual_seed(0)
    x = torch.cat([binade_samples(torch.float32, per_binade=4096),
                   (torch.rand(1 << 21, generator=g, dtype=torch.float64) * 84 - 72).float(),
                   torch.linspace(-8, 8, 200001)])
    return x[x.isfinite()]


@functools.lru_cache(maxsize=3)
def float32_sweep_reference(approximate):
    return reference_and_scales(float32_sweep(), approximate)


def test_float32_sweep(device, approximate):
    """f, f' and f'' (the backward passes with unit gradients) at every input of the sweep,
    within the float32 bounds of conftest.py."""
    x = float32_sweep()
    f, d1, d2, s1, s2 = float32_sweep_reference(approximate)
    xd, one = x.to(device), torch.ones_like(x, device=device)
    y = ops.gelu(xd, approximate).cpu()
    dy = ops.gelu_backward(one, xd, approximate).cpu()
    ddy = ops.gelu_double_backward(one, one, xd, approximate)[1].cpu()
    assert y.dtype == dy.dtype == ddy.dtype == torch.float32
    dtype = torch.float32
    assert_within(y, f, 0.0, FORWARD_ULPS[dtype], dtype, f"f {approximate}", x)
    assert_within(dy, d1, s1, FIRST_DERIVATIVE_ULPS[dtype], dtype, f"f' {approximate}", x)
    assert_within(ddy, d2, s2, SECOND_DERIVATIVE_ULPS[dtype], dtype, f"f'' {approximate}", x)


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_forward_16_bit_correctly_rounded(device, approximate, dtype):
    """Every 16-bit input (but the tiny ones, tested below)."""
    x = all_values(dtype)
    x = x[x.isfinite() & (x.double().abs() >= TINY_INPUT)]
    y = gelu_ext.gelu(x.to(device), approximate).cpu()
    ref, _, _ = torch_reference(x, approximate)
    assert y.dtype == dtype
    assert_ulps(y, ref, FORWARD_ULPS[dtype], f"{dtype} {approximate}", x,
                mp_exact(x.double(), approximate, 0))


def test_forward_float64_against_mpmath(device, approximate):
    x = torch.cat([
        binade_samples(torch.float64, per_binade=1)[::8],
        torch.linspace(-40, 10, 401, dtype=torch.float64),
        single_path_edges_f64(),
    ])
    x = x[x.abs() < 1e300]  # beyond, f(x) is trivially x or -0; tested below
    y = gelu_ext.gelu(x.to(device), approximate).cpu()
    assert_ulps(y, MpValues.of(x, approximate, 0), FORWARD_ULPS[torch.float64],
                f"float64 {approximate}", x)


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


def tiny_inputs(dtype):
    """Inputs of magnitude below TINY_INPUT, both signs: every bfloat16 one, every 61st float32
    bit pattern below 2^-123 (f = x/2 + x^2 phi(0) + ... rounds into the subnormals) and 2^16
    random ones up to TINY_INPUT."""
    if dtype == torch.bfloat16:
        x = all_values(dtype)
        return x[x.double().abs() < TINY_INPUT]
    tiny = torch.arange(0, 1 << 25, 61, dtype=torch.int32).view(torch.float32)
    g = torch.Generator().manual_seed(3)
    small = binade_samples(torch.float32, per_binade=512, seed=4)
    small = small[(small.abs() < TINY_INPUT) & (small.abs() >= 2.0**-123)]
    return torch.cat([tiny, -tiny, small[torch.randperm(len(small), generator=g)[:1 << 16]]])


@functools.lru_cache(maxsize=1)
def tiny_results(device, approximate, dtype, up):
    """geglu(x, up) (f(x) for up 1: gelu), each beside ordinary inputs so that they share
    vectors; the float64 reference; where it is a midpoint of x's type (tie), and where it lies
    within REFERENCE_ACCURACY of one (near: ties included). Kept for the next test of the same
    arguments."""
    x = tiny_inputs(dtype)
    mixed = torch.stack([x, torch.full_like(x, 0.75), torch.full_like(x, -3.0)], 1)
    mixed = mixed.to(device)
    if up == 1:
        y = gelu_ext.gelu(mixed, approximate)
    else:
        y = gelu_ext.geglu(mixed, torch.full_like(mixed, up), approximate)
    ref = torch_reference(x, approximate)[0] * up
    unit = ulp(ref, x.dtype)
    offset = (ref / unit) % 1 - 0.5
    tie = offset == 0
    near = offset.abs() * unit <= REFERENCE_ACCURACY * ref.abs()
    return x, y.cpu()[:, 0], ref, tie, near


@pytest.mark.parametrize("where", [
    "off midpoints",
    # float32 is within 0.502 ulp, not correctly rounded: at these ties the double path gives the
    # even neighbour (0.5 ulp and a hair); 16-bit results settle them (settle_ties_of_tiny_f).
    "at midpoints"])
@pytest.mark.parametrize("up", [1.0, 0.75])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_tiny_inputs(device, approximate, dtype, up, where):
    """f(x) (gelu) and 0.75 f(x) (geglu) correctly rounded, the sign of zero included.
    Off midpoints (up * f(x) not near a midpoint of the type) the float64 reference decides. At
    them, where up * x/2 is a midpoint, the exact up f(x) = up x/2 + up x (gate(x) - 1/2) lies
    above it (gate(x) - 1/2 has the sign of x: away from zero for x > 0, toward zero for x < 0) by
    far less than a double's resolution, so the correctly rounded result is the neighbour above
    (mpmath agrees on a sample; the float64 reference rounded once would demand the even
    neighbour, a double rounding); near them, mpmath decides."""
    x, y, ref, tie, near = tiny_results(device, approximate, dtype, up)
    what = f"tiny {dtype} {approximate}, up {up}"
    if where == "off midpoints":
        assert (~near).sum() > 1000
        assert_correctly_rounded(y[~near], ref[~near], torch.zeros_like(ref[~near]), dtype, what,
                                 x[~near])
        return
    assert tie.sum() > 100
    xt, yt, rt = x[tie].double(), y[tie], ref[tie]
    if dtype == torch.float32:  # within 0.502 ulp, not correctly rounded: either neighbour
        below = torch.floor(rt / ulp(rt, dtype)) * ulp(rt, dtype)
        either = (yt.double() == below) | (yt.double() == below + ulp(rt, dtype))
        assert either.all(), f"{what}: a tie's result is neither neighbour"
        return
    sample = torch.arange(0, len(xt), max(1, len(xt) // 100)).tolist()
    exact = mp_exact(xt, approximate, 0, torch.tensor(up))(sample)
    assert all(e > mp.mpf(rt[i].item()) for e, i in zip(exact, sample))
    above = (torch.floor(rt / ulp(rt, dtype)) + 1) * ulp(rt, dtype)
    others = near & ~tie
    z = x[others].double()
    failures = []
    for args in [(yt, above, torch.zeros_like(rt), dtype, what + ", ties", xt),
                 (y[others], ref[others], torch.zeros_like(z), dtype, what + ", near ties", z,
                  mp_exact(z, approximate, 0, torch.tensor(up)))]:
        try:
            assert_correctly_rounded(*args)
        except AssertionError as failure:
            failures.append(str(failure))
    assert not failures, "\n".join(failures)


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
