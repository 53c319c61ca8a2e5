"""Fused bias-GELU and GEGLU: values against float64 references, gradients to second order,
layouts (chunked views without copies), errors, opcheck, torch.compile and vmap."""

import functools
from fractions import Fraction

import pytest
import torch
import torch.autograd.forward_ad as forward_ad
from conftest import (FLOAT_DTYPES, FORWARD_ULPS, MpValues, all_values, assert_product_within,
                      assert_same_bits, assert_ulps, mp_exact, round_to)
from torch.autograd import gradcheck, gradgradcheck

import gelu_ext
from gelu_ext.reference import (derivative_scales, forward_reference, mp_reference, torch_reference,
                                ulp)

ops = torch.ops.gelu_ext


def assert_gradient(got, factor, z, d1, approximate, dtype, what):
    """got = factor * f'(z) within its bound (conftest.assert_product_within), in ulps of the
    exact value, or of |factor| (|a| + |b|) where that is larger: near the roots of f' = a + b its
    terms cancel, and the bound applies to the larger term, as for f' itself (docs/accuracy.md).
    16-bit results are correctly rounded everywhere."""
    assert_product_within(got.cpu(), d1, factor, derivative_scales(z, approximate)[0], dtype,
                          f"{what} {dtype}", z, mp_exact(z, approximate, 1, factor))


def exact(z, approximate, dtype):
    """(f, f') at the float64 points z: from mpmath when judging float64 results (the float64
    torch reference is not exact enough for that), from the torch reference otherwise."""
    if dtype != torch.float64:
        f, d1, _ = torch_reference(z, approximate)
        return f, d1
    values = [mp_reference(v, approximate) for v in z.flatten().tolist()]
    return tuple(torch.tensor([float(v[k]) for v in values], dtype=torch.float64).view(z.shape)
                 for k in (0, 1))


def exact_values(z, approximate, dtype):
    """(f, f') at the float64 points z to judge dtype's results by: MpValues for float64 (a
    float64 reference would carry half an ulp of error), the torch reference otherwise."""
    if dtype == torch.float64:
        return MpValues.of(z, approximate, 0, 1)
    return exact(z, approximate, dtype)


def randn(*shape, dtype=torch.float32, device="cpu", scale=3.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale).to(dtype).to(device)


# ---------------------------------------------------------------------------------------------
# bias_gelu

# Row lengths: on CUDA, 37 takes the strided kernel and 64 the rows kernel (whole, aligned 16-byte
# vectors per row).
COLUMNS = [37, 64]


@pytest.mark.parametrize("columns", COLUMNS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_bias_gelu_values(device, approximate, dtype, columns):
    x = randn(64, columns, dtype=dtype, device=device)
    b = randn(columns, dtype=dtype, device=device, seed=1)
    y = gelu_ext.bias_gelu(x, b, approximate).cpu()
    # The kernel forms the sum exactly for 16-bit and float32 operands (in double, or as a float
    # pair), and with one rounding for float64 ones, whose results are judged against mpmath.
    z = x.cpu().double() + b.cpu().double()
    assert_ulps(y, exact_values(z, approximate, dtype)[0], FORWARD_ULPS[dtype],
                f"bias_gelu {dtype}", z, mp_exact(z, approximate, 0))


@pytest.mark.parametrize("columns", COLUMNS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_bias_gelu_backward_values(device, approximate, dtype, columns):
    x = randn(64, columns, dtype=dtype, device=device)
    b = randn(columns, dtype=dtype, device=device, seed=1)
    grad = randn(64, columns, dtype=dtype, device=device, seed=2, scale=1.0)
    grad_input, grad_bias = ops.bias_gelu_backward(grad, x, b, approximate)
    z = x.cpu().double() + b.cpu().double()
    _, d1 = exact_values(z, approximate, dtype)
    assert_gradient(grad_input, grad.cpu().double(), z, d1, approximate, dtype, "bias_gelu")
    assert_sums_rows(grad_bias, grad_input)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_bias_gelu_16_bit_with_many_fallbacks(device, approximate, dtype):
    # Long rows where most sums leave the narrow path's core domain or land on a 16-bit midpoint
    # where GELU is nearly the identity: the CPU kernels queue thousands of elements in one row
    # for the double path, so the queue fills and is redone mid-row, and every result must
    # still be the correctly rounded one.
    x = randn(8, 4096, dtype=dtype, device=device, scale=12.0)
    x[::2, ::2] = randn(4, 2048, dtype=dtype, device=device, seed=3, scale=2.0).abs() + 3
    b = randn(4096, dtype=dtype, device=device, seed=1, scale=2.0)
    grad = randn(8, 4096, dtype=dtype, device=device, seed=2, scale=1.0)
    z = x.cpu().double() + b.cpu().double()
    f, d1 = exact(z, approximate, dtype)
    y = gelu_ext.bias_gelu(x, b, approximate).cpu()
    assert_ulps(y, f, FORWARD_ULPS[dtype], f"bias_gelu {dtype}", z, mp_exact(z, approximate, 0))
    grad_input, grad_bias = ops.bias_gelu_backward(grad, x, b, approximate)
    assert_gradient(grad_input, grad.cpu().double(), z, d1, approximate, dtype, "bias_gelu")
    assert_sums_rows(grad_bias, grad_input)


def midpoint_sums(dtype, low, high, device):
    """Bias operands whose sums are the 16-bit midpoints above each 16-bit value v in [low, high):
    x = v (one row), b = half of v's ulp. Returns v, the half ulps (float64), x and b."""
    v = torch.arange(0, 1 << 16, dtype=torch.int32).to(torch.int16).view(dtype).double()
    v = v[(v >= low) & (v < high)]
    half_ulp = ulp(v, dtype) / 2
    x = v.to(dtype).to(device).view(1, -1)
    b = half_ulp.to(dtype).to(device)
    assert torch.equal(x.cpu().double().flatten() + b.cpu().double(), v + half_ulp)  # midpoints
    return v, half_ulp, x, b


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_bias_gelu_rounds_down_at_16_bit_midpoints(device, approximate, dtype):
    # Each sum x + b is the midpoint above a 16-bit value v in [6, 200): x = v, b = half of v's
    # ulp. gelu(z) < z for z > 0, and z - gelu(z) is below 1e-3 there (every form), far below
    # half an ulp, so the correctly rounded result is v itself. (Beyond z = 8.2, or 7.1 for
    # tanh, gelu(z) rounds to z in double: rounding z then picks the even neighbour, v or the
    # value above it.)
    v, half_ulp, x, b = midpoint_sums(dtype, 6, 200, device)
    y = gelu_ext.bias_gelu(x, b, approximate).cpu().double().flatten()
    wrong = (y != v).nonzero().flatten()
    assert wrong.numel() == 0, (
        f"{wrong.numel()} of {v.numel()} midpoints rounded up, first z = "
        f"{(v + half_ulp)[wrong[0]].item()!r}: {y[wrong[0]].item()!r} for {v[wrong[0]].item()!r}")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_bias_gelu_16_bit_midpoints_across_the_narrow_core(device, approximate, dtype):
    # Sums x + b that are 16-bit midpoints, from 2 to 12: from about 4.8 gelu(z) lies within the
    # narrow path's bound of z, which it settles by gelu(z) < z (the interval moved below z);
    # beyond 8 (9 for tanh and sigmoid) the double path does. Every result must be the correctly
    # rounded one, whichever side of the midpoint gelu(z) reaches (for the sigmoid form near 4,
    # z - gelu(z) exceeds half a float16 ulp).
    v, half_ulp, x, b = midpoint_sums(dtype, 2, 12, device)
    z = v + half_ulp
    f, _ = exact(z, approximate, dtype)
    y = gelu_ext.bias_gelu(x, b, approximate).cpu().flatten()
    assert_ulps(y, f, FORWARD_ULPS[dtype], f"bias_gelu {dtype} at midpoints", z,
                mp_exact(z, approximate, 0))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_geglu_rounds_16_bit_midpoints_by_the_side_gelu_lies_on(device, approximate, dtype):
    # gate = v, a 16-bit value in [24, 200), where gelu(v) = v - tiny and gelu'(v) = 1 + tiny
    # (tiny below 1e-16, every form; both round to v and 1 in double), and a factor 1.5 or -1.5:
    # where 1.5 v is a 16-bit midpoint, gelu(v) * 1.5 (geglu, and grad * gelu(gate)) is correctly
    # rounded toward zero, and grad * up * gelu'(gate) (grad * up = 1.5 v) away from zero.
    v = torch.arange(0, 1 << 16, dtype=torch.int32).to(torch.int16).view(dtype).double()
    v = v[(v >= 24) & (v < 200)]
    v = torch.cat([v, v])
    factor = torch.cat([torch.full_like(v[:len(v) // 2], 1.5), torch.full_like(v[:len(v) // 2], -1.5)])
    z = v * factor  # exact in double
    step = ulp(z.abs(), dtype)
    midpoint = (z.abs() / step) % 1 == 0.5
    assert midpoint.sum() > 100
    toward_zero = z.sign() * torch.floor(z.abs() / step) * step
    away = z.sign() * torch.ceil(z.abs() / step) * step

    gate, by = v.to(dtype).to(device), factor.to(dtype).to(device)
    forward = gelu_ext.geglu(gate, by, approximate).cpu().double()
    d_gate, d_up = ops.geglu_backward(by, gate, gate, approximate)  # grad 1.5, up v
    d_gate_swapped = ops.geglu_backward(gate, gate, by, approximate)[0]  # grad v, up 1.5
    for name, got, want in [("geglu", forward, toward_zero), ("grad_up", d_up, toward_zero),
                            ("grad_gate", d_gate, away), ("grad_gate", d_gate_swapped, away)]:
        got = got.cpu().double()
        wrong = (midpoint & (got != want)).nonzero().flatten()
        assert wrong.numel() == 0, (
            f"{name}: {wrong.numel()} of {int(midpoint.sum())} midpoints rounded the wrong way, "
            f"first z = {z[wrong[0]].item()!r}: {got[wrong[0]].item()!r}")


def assert_sums_rows(grad_bias, grad_input):
    """grad_bias is the exact sum of grad_input's rows, rounded once, give or take the error of
    the accumulation: on the CPU a double sum (compensated for float64), within n u^2 sum|v| of
    the exact one for float64 and n u sum|v| otherwise (u = 2^-53, n rows); on CUDA ATen's sum,
    accumulated in float (double for float64)."""
    assert grad_bias.dtype == grad_input.dtype and grad_bias.shape == grad_input.shape[-1:]
    rows = grad_input.cpu().double().reshape(-1, grad_input.shape[-1])
    n = rows.shape[0]
    exact = [sum((Fraction(v) for v in column), Fraction(0)) for column in rows.t().tolist()]
    magnitude = rows.abs().sum(0)
    if grad_input.device.type == "cpu":
        unit = n * 2.0**-106 if grad_input.dtype == torch.float64 else 2.0**-53
    else:
        unit = 2.0**-53 if grad_input.dtype == torch.float64 else 2.0**-24
    slack = n * unit * magnitude
    half_ulp = 0.5 * ulp(torch.tensor([float(e) for e in exact], dtype=torch.float64),
                         grad_input.dtype)
    got = grad_bias.cpu().double().tolist()
    for c, (g, e) in enumerate(zip(got, exact)):
        error = float(abs(Fraction(g) - e))
        assert error <= half_ulp[c] + slack[c], (
            f"grad_bias[{c}] = {g!r}, exact row sum {float(e)!r}: error {error:.3g} > "
            f"{half_ulp[c].item():.3g} + {slack[c].item():.3g}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_bias_gradient_of_non_finite_gradients(device, dtype):
    # Columns holding +inf, -inf, both, and NaN sum to +inf, -inf, NaN and NaN, as ATen's sum does.
    x, b = randn(300, 6, dtype=dtype, device=device), randn(6, dtype=dtype, device=device, seed=1)
    grad = randn(300, 6, dtype=dtype, device=device, seed=2).abs() + 1
    grad[7, 0] = grad[200, 2] = float("inf")
    grad[9, 1] = grad[100, 2] = float("-inf")
    grad[150, 3] = float("nan")
    grad_input, grad_bias = ops.bias_gelu_backward(grad, x, b, "none")
    torch.testing.assert_close(grad_bias.cpu().double(), grad_input.cpu().double().sum(0),
                               rtol=1e-2, atol=0, equal_nan=True)
    assert grad_bias[:4].isinf().tolist() == [True, True, False, False]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_bias_gradient_over_many_rows(device, dtype):
    # Rows split between threads mid-row (4099 x 37 is not a multiple of the parallel grain),
    # and a transposed layout, whose blocks run down the columns.
    for x in [randn(4099, 37, dtype=dtype, device=device), randn(37, 700, dtype=dtype,
                                                                 device=device).t()]:
        b = randn(x.shape[-1], dtype=dtype, device=device, seed=1)
        grad = randn(*x.shape, dtype=dtype, device=device, seed=2, scale=1.0)
        grad_input, grad_bias = ops.bias_gelu_backward(grad, x, b, "none")
        assert_sums_rows(grad_bias, grad_input)
    # Biases that are views: strided, and one value expanded (stride 0) to every column.
    x = randn(300, 37, dtype=dtype, device=device)
    grad = randn(300, 37, dtype=dtype, device=device, seed=2, scale=1.0)
    for b in [randn(74, dtype=dtype, device=device, seed=1)[::2],
              randn(1, dtype=dtype, device=device, seed=1).expand(37)]:
        grad_input, grad_bias = ops.bias_gelu_backward(grad, x, b, "none")
        assert_sums_rows(grad_bias, grad_input)


@functools.lru_cache(maxsize=6)
def sums_that_float_cannot_hold(dtype, approximate):
    """16-bit pairs x in (-8, -4], 2^-20 <= |b| < 2^-11 whose float sum is inexact, as float64:
    x, b, their exact sum z, f(z), and where f(z) and f(float sum) round apart."""
    every = all_values(dtype).double()
    x = every[(every <= -4) & (every > -8)]
    b = every[(every.abs() >= 2.0**-20) & (every.abs() < 2.0**-11)]
    x, b = x.repeat_interleave(len(b)), b.repeat(len(x))
    z = x + b  # exact in double
    z_float = (x.float() + b.float()).double()  # the float sum
    inexact = z_float != z
    x, b, z, z_float = x[inexact], b[inexact], z[inexact], z_float[inexact]
    f, f_float = forward_reference(z, approximate), forward_reference(z_float, approximate)
    apart = round_to(f, dtype) != round_to(f_float, dtype)
    return x[apart], b[apart], z[apart], f[apart]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_bias_gelu_16_bit_sums_that_float_cannot_hold(device, approximate, dtype):
    # x + b needs more than float's 24 bits where b lies 17 or more binades below x (16-bit data
    # hold 8 or 11 bits). Where x < -4, f changes by up to 2^-10 of itself per 2^-16 of x, so
    # the bits float would lose decide the 16-bit rounding of some results: pairs where f at
    # the float sum and f at the exact sum round to different 16-bit values. The fused op must
    # give the latter (the CPU kernels redo such sums in double).
    x, b, z, f = sums_that_float_cannot_hold(dtype, approximate)
    assert len(x) >= 5, f"only {len(x)} pairs tell the sums apart"
    y = gelu_ext.bias_gelu(x.to(dtype).to(device).view(1, -1), b.to(dtype).to(device),
                           approximate).cpu().flatten()
    assert_ulps(y, f, FORWARD_ULPS[dtype], f"bias_gelu {dtype}, sums beyond float", z,
                mp_exact(z, approximate, 0))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_bias_gelu_is_not_rounded_before_the_gelu(device, approximate, dtype):
    # x + b needs more bits than the 16-bit type: rounded to it first, then f, then rounded again,
    # the result would differ from f(x + b) correctly rounded on the pairs kept here; the fused
    # op rounds once.
    every = all_values(dtype).double()
    x = every[(every.abs() >= 0.25) & (every.abs() < 4)][::7]
    b = every[(every.abs() >= 2.0**-12) & (every.abs() < 2.0**-6)][::5]
    x, b = x.repeat_interleave(len(b)), b.repeat(len(x))
    z = x + b  # exact in double
    f = torch_reference(z, approximate)[0]
    f_of_rounded_sum = torch_reference(round_to(z, dtype).double(), approximate)[0]
    apart = round_to(f, dtype) != round_to(f_of_rounded_sum, dtype)
    assert apart.sum() >= 100, f"only {int(apart.sum())} pairs tell the orders apart"
    x, b, z, f = x[apart], b[apart], z[apart], f[apart]
    y = gelu_ext.bias_gelu(x.to(dtype).to(device).view(1, -1), b.to(dtype).to(device),
                           approximate).cpu().flatten()
    assert_ulps(y, f, FORWARD_ULPS[dtype], f"bias_gelu {dtype}, one rounding", z,
                mp_exact(z, approximate, 0))


def test_bias_gelu_gradcheck(device, approximate):
    x = randn(5, 4, dtype=torch.float64, device=device).requires_grad_()
    b = randn(4, dtype=torch.float64, device=device, seed=1).requires_grad_()
    f = lambda xx, bb: gelu_ext.bias_gelu(xx, bb, approximate)  # noqa: E731
    assert gradcheck(f, (x, b))
    assert gradgradcheck(f, (x, b))


def test_bias_gelu_matches_composition(device, approximate):
    x = randn(3, 5, 8, dtype=torch.float64, device=device).requires_grad_()
    b = randn(8, dtype=torch.float64, device=device, seed=1).requires_grad_()
    y = gelu_ext.bias_gelu(x, b, approximate)
    y_ref = gelu_ext.gelu(x + b, approximate)
    torch.testing.assert_close(y, y_ref, rtol=1e-14, atol=1e-300)
    g = randn(3, 5, 8, dtype=torch.float64, device=device, seed=2)
    torch.testing.assert_close(torch.autograd.grad(y, (x, b), g),
                               torch.autograd.grad(y_ref, (x, b), g), rtol=1e-12, atol=1e-14)


def test_float64_bias_gelu_is_gelu_of_the_rounded_sum(device, approximate):
    """float64 operands: the sum is rounded once and f computed at it as gelu computes it, so
    bias_gelu(x, b) and gelu(x + b) are the same bits, signed zeros included (-0 + -0 = -0, whose
    f is -0), on each side of the CPU's f64_pair domain edges and where x + b is not finite."""
    edges = [0.0, 1e-310, 5e-324, 1e-20, 0.75, 19.99, 20.01, 36.99, 37.0, 37.01, 38.0, 40.5, 379.9,
             380.1, 1e300]
    special = torch.tensor([v for e in edges for v in (e, -e)] + [-0.0, float("nan")] * 2,
                           dtype=torch.float64)
    x = torch.cat([randn(200, dtype=torch.float64, scale=4.0), special, special, special,
                   torch.tensor([1e308, float("inf"), -float("inf"), 1.0], dtype=torch.float64)])
    b = torch.cat([randn(200, dtype=torch.float64, scale=4.0, seed=1), torch.zeros_like(special),
                   -torch.zeros_like(special), special.flip(0) * 0.5,
                   torch.tensor([1e308, 1.0, -float("inf"), -1.0], dtype=torch.float64)])
    x, b = x.to(device), b.to(device)
    # A bias per column (x one row), and one bias for every row (x one column).
    for got, want, what in ((gelu_ext.bias_gelu(x.view(1, -1), b, approximate).view(-1),
                             gelu_ext.gelu(x + b, approximate), "a bias per column"),
                            (gelu_ext.bias_gelu(x.view(-1, 1), b[:1], approximate).view(-1),
                             gelu_ext.gelu(x + b[0], approximate), "one bias")):
        same = (got.isnan() & want.isnan()) | ((got == want) & (got.signbit() == want.signbit()))
        assert same.all(), (f"{what}: bias_gelu {got[~same][:4].tolist()} against gelu "
                            f"{want[~same][:4].tolist()} at x = {x[~same][:4].tolist()}")


# ---------------------------------------------------------------------------------------------
# geglu

def assert_geglu_values(gate, up, grad, y, grad_gate, grad_up, approximate, dtype):
    z = gate.cpu().double()
    f, d1 = exact_values(z, approximate, dtype)
    g, u = grad.cpu().double(), up.cpu().double()
    assert_product_within(y.cpu(), f, u, 0, dtype, f"geglu {dtype}", z,
                          mp_exact(z, approximate, 0, u))
    assert_product_within(grad_up.cpu(), f, g, 0, dtype, f"geglu grad_up {dtype}", z,
                          mp_exact(z, approximate, 0, g))
    assert_gradient(grad_gate, (g, u), z, d1, approximate, dtype, "geglu grad_gate")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_geglu_values(device, approximate, dtype):
    gate, up = randn(64, 37, dtype=dtype, device=device), randn(64, 37, dtype=dtype, device=device,
                                                              seed=1)
    grad = randn(64, 37, dtype=dtype, device=device, seed=2, scale=1.0)
    assert_geglu_values(gate, up, grad, gelu_ext.geglu(gate, up, approximate),
                        *ops.geglu_backward(grad, gate, up, approximate), approximate, dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_geglu_saturated_gates_times_large_operands(device, approximate, dtype):
    # Far in the negative tail f and f' lie far below every float, yet times the largest
    # operands (grad * up near 2^256 for float32 and bfloat16) a value clamped too soon would
    # show: the sigmoid form's f(-70) is 1.3e-50, its exact f(-400) 1e-293.
    big = {torch.float16: 6e4}.get(dtype, 3e38)
    gate = torch.cat([-torch.logspace(1, 3, 400, dtype=torch.float64),
                      torch.linspace(-440, -60, 97, dtype=torch.float64)]).to(dtype)
    up = torch.full_like(gate, -big)
    up[::2] = big
    grad = torch.full_like(gate, big)
    gate, up, grad = gate.to(device), up.to(device), grad.to(device)
    assert_geglu_values(gate, up, grad, gelu_ext.geglu(gate, up, approximate),
                        *ops.geglu_backward(grad, gate, up, approximate), approximate, dtype)


@pytest.mark.parametrize("columns", COLUMNS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_geglu_packed_values(device, approximate, dtype, columns):
    h = randn(64, 2 * columns, dtype=dtype, device=device)
    grad = randn(64, columns, dtype=dtype, device=device, seed=2, scale=1.0)
    grad_h = ops.geglu_packed_backward(grad, h, approximate)
    assert grad_h.shape == h.shape
    assert_geglu_values(*h.chunk(2, dim=-1), grad, gelu_ext.geglu_packed(h, approximate),
                        *grad_h.chunk(2, dim=-1), approximate, dtype)


def test_geglu_on_chunks_needs_no_copy(device):
    h = randn(16, 2 * 24, device=device)
    gate, up = h.chunk(2, dim=-1)
    assert not gate.is_contiguous()
    with torch.profiler.profile() as prof:
        y = gelu_ext.geglu(gate, up)
    names = {e.name for e in prof.events()}
    assert not names & {"aten::copy_", "aten::clone", "aten::contiguous"}, names
    assert torch.equal(y, gelu_ext.geglu(gate.contiguous(), up.contiguous()))
    torch.testing.assert_close(gelu_ext.GEGLU()(h), y, rtol=0, atol=0)


def test_geglu_packed_backward_needs_no_concatenation(device):
    h = randn(16, 2 * 24, device=device).requires_grad_()
    y = gelu_ext.GEGLU()(h)
    with torch.profiler.profile() as prof:
        y.backward(torch.ones_like(y))
    names = {e.name for e in prof.events()}
    assert "gelu_ext::geglu_packed_backward" in names
    assert not names & {"aten::cat", "aten::copy_", "aten::clone", "aten::contiguous"}, names


def test_geglu_packed_gradcheck(device, approximate):
    h = randn(5, 8, dtype=torch.float64, device=device).requires_grad_()
    f = lambda h: gelu_ext.geglu_packed(h, approximate)  # noqa: E731
    assert gradcheck(f, (h,))
    assert gradgradcheck(f, (h,))


def test_geglu_gradcheck(device, approximate):
    gate = randn(5, 4, dtype=torch.float64, device=device).requires_grad_()
    up = randn(5, 4, dtype=torch.float64, device=device, seed=1).requires_grad_()
    f = lambda g, u: gelu_ext.geglu(g, u, approximate)  # noqa: E731
    assert gradcheck(f, (gate, up))
    assert gradgradcheck(f, (gate, up))


def test_geglu_matches_composition(device, approximate):
    gate = randn(3, 5, 8, dtype=torch.float64, device=device).requires_grad_()
    up = randn(3, 5, 8, dtype=torch.float64, device=device, seed=1).requires_grad_()
    y = gelu_ext.geglu(gate, up, approximate)
    y_ref = gelu_ext.gelu(gate, approximate) * up
    torch.testing.assert_close(y, y_ref, rtol=1e-14, atol=1e-300)
    g = randn(3, 5, 8, dtype=torch.float64, device=device, seed=2)
    torch.testing.assert_close(torch.autograd.grad(y, (gate, up), g),
                               torch.autograd.grad(y_ref, (gate, up), g), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_fused_ops_on_channels_last(device, approximate, dtype):
    # 4-D operands in channels_last (and 5-D in channels_last_3d) memory format, whose last
    # dimension (the bias's and geglu's halves') is not the fastest: the layout of aten's
    # elementwise ops, and the values of contiguous copies, bit for bit, signs of zero included.
    for shape, memory_format in [((2, 8, 5, 6), torch.channels_last),
                                 ((2, 4, 3, 5, 6), torch.channels_last_3d)]:
        def layout(t):
            return t.to(memory_format=memory_format)

        x, up, grad = (layout(randn(*shape, dtype=dtype, device=device, seed=s)) for s in (0, 1, 2))
        x[..., 0, :2] = torch.tensor([0.0, -0.0])
        b = randn(shape[-1], dtype=dtype, device=device, seed=3)
        h = layout(randn(*shape[:-1], 2 * shape[-1], dtype=dtype, device=device, seed=4))
        contiguous = [t.contiguous() for t in (x, up, grad, h)]
        for name, call, like in [
                ("bias_gelu", lambda x, up, g, h: [gelu_ext.bias_gelu(x, b, approximate)], x + b),
                ("bias_gelu_backward",
                 lambda x, up, g, h: list(ops.bias_gelu_backward(g, x, b, approximate)), x + b),
                ("geglu", lambda x, up, g, h: [gelu_ext.geglu(x, up, approximate)], x * up),
                ("geglu_backward",
                 lambda x, up, g, h: list(ops.geglu_backward(g, x, up, approximate)), x * up),
                ("geglu_packed", lambda x, up, g, h: [gelu_ext.geglu_packed(h, approximate)],
                 torch.mul(*h.chunk(2, dim=-1)))]:
            got, want = call(x, up, grad, h), call(*contiguous)
            assert got[0].stride() == like.stride(), (name, memory_format, got[0].stride())
            for k, (g, w) in enumerate(zip(got, want)):
                assert_same_bits(g, w.view(g.shape), f"{name} output {k}, {memory_format}")


# ---------------------------------------------------------------------------------------------
# Forward mode: the fused ops' tangents against f and f' from mpmath, and against finite
# differences (gradcheck).

def fused_tangents(approximate, device, rows=4, columns=6):
    """(name, fused op, float64 primals, tangents, the exact tangent at them or None)."""
    def sample(*shape, seed):
        return randn(*shape, dtype=torch.float64, device=device, seed=seed)
    x, b, up = sample(rows, columns, seed=0), sample(columns, seed=1), sample(rows, columns, seed=2)
    dx, db, dup = sample(rows, columns, seed=3), sample(columns, seed=4), sample(rows, columns,
                                                                               seed=5)
    # bias_gelu: d gelu(x + b) = f'(x + b) (dx + db); geglu: d (f(g) u) = u f'(g) dg + f(g) du.
    _, d1_sum = exact((x + b).cpu(), approximate, torch.float64)
    f_gate, d1_gate = exact(x.cpu(), approximate, torch.float64)
    u, dg, du = up.cpu(), dx.cpu(), dup.cpu()
    geglu_tangent = u * d1_gate * dg + f_gate * du
    return [
        ("bias_gelu", lambda v, w: gelu_ext.bias_gelu(v, w, approximate), (x, b), (dx, db),
         d1_sum * (dx + db).cpu()),
        ("geglu", lambda v, w: gelu_ext.geglu(v, w, approximate), (x, up), (dx, dup),
         geglu_tangent),
        ("geglu_packed", lambda t: gelu_ext.geglu_packed(t, approximate),
         (torch.cat([x, up], dim=-1),), (torch.cat([dx, dup], dim=-1),), geglu_tangent),
    ]


def assert_tangent(got, expected, what):
    assert got is not None, f"{what}: no tangent"
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-13, atol=1e-15, msg=what)


def test_fused_jvp(device, approximate):
    for name, fused, primals, tangents, expected in fused_tangents(approximate, device):
        _, tangent = torch.func.jvp(fused, primals, tangents)
        assert_tangent(tangent, expected, name)


def test_fused_dual_tensors(device, approximate):
    # Classic forward AD, with a tangent on every input (a tangent left out counts as zero: see
    # the single-input cases below).
    for name, fused, primals, tangents, expected in fused_tangents(approximate, device):
        with forward_ad.dual_level():
            duals = [forward_ad.make_dual(p, t) for p, t in zip(primals, tangents)]
            assert_tangent(forward_ad.unpack_dual(fused(*duals)).tangent, expected, name)
    x, b = randn(3, 4, dtype=torch.float64, device=device), randn(4, dtype=torch.float64,
                                                                  device=device, seed=1)
    _, d1 = exact((x + b).cpu(), approximate, torch.float64)
    db = torch.ones_like(b)
    with forward_ad.dual_level():
        y = gelu_ext.bias_gelu(x, forward_ad.make_dual(b, db), approximate)
        assert_tangent(forward_ad.unpack_dual(y).tangent, d1, "bias_gelu, bias tangent only")
        y = gelu_ext.geglu(forward_ad.make_dual(x, torch.ones_like(x)), x + b, approximate)
        assert_tangent(forward_ad.unpack_dual(y).tangent,
                       (x + b).cpu() * exact(x.cpu(), approximate, torch.float64)[1],
                       "geglu, gate tangent only")


def test_fused_gradcheck_forward_mode(device, approximate):
    for name, fused, primals, _, _ in fused_tangents(approximate, device, rows=2, columns=3):
        inputs = tuple(p.requires_grad_() for p in primals)
        assert gradcheck(fused, inputs, check_forward_ad=True, check_backward_ad=True), name


def test_fused_second_order_in_both_modes(device, approximate):
    # Reverse over reverse and forward over reverse, against finite differences of the gradient.
    for name, fused, primals, _, _ in fused_tangents(approximate, device, rows=2, columns=3):
        inputs = tuple(p.requires_grad_() for p in primals)
        assert gradgradcheck(fused, inputs, check_fwd_over_rev=True, check_rev_over_rev=True), name


def test_fused_second_order_under_torch_func(device, approximate):
    # torch.func's Hessians (reverse over reverse, forward over reverse) against autograd's,
    # which gradgradcheck checks against finite differences (test above).
    for name, fused, primals, _, _ in fused_tangents(approximate, device, rows=2, columns=3):
        def scalar(*inputs):
            return (fused(*inputs) ** 2).sum()
        arguments = tuple(range(len(primals)))
        expected = torch.autograd.functional.hessian(scalar, primals)
        for transform in (torch.func.hessian,
                          lambda fn, argnums: torch.func.jacrev(torch.func.jacrev(fn, argnums),
                                                                argnums)):
            got = transform(scalar, argnums=arguments)(*primals)
            for i in arguments:
                for j in arguments:
                    torch.testing.assert_close(got[i][j], expected[i][j], rtol=1e-12, atol=1e-14,
                                               msg=f"{name}: d2/d{i}d{j}")


# ---------------------------------------------------------------------------------------------
# Errors, opcheck, compile, vmap, modules

def test_errors(device):
    x = torch.ones(4, 3, device=device)
    with pytest.raises(RuntimeError, match="'bias' must be 1-D"):
        gelu_ext.bias_gelu(x, torch.ones(4, 3, device=device))
    with pytest.raises(RuntimeError, match="as many elements as the last dimension"):
        gelu_ext.bias_gelu(x, torch.ones(4, device=device))
    with pytest.raises(TypeError, match="same dtype"):
        gelu_ext.bias_gelu(x, torch.ones(3, device=device, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="same device"):
        gelu_ext.bias_gelu(x, torch.ones(3, device="meta"))
    with pytest.raises(RuntimeError, match="same shape"):
        gelu_ext.geglu(x, torch.ones(3, 4, device=device))
    with pytest.raises(TypeError, match="same dtype"):
        gelu_ext.geglu(x, x.half())
    with pytest.raises(TypeError, match="floating-point"):
        gelu_ext.geglu(x.long(), x.long())
    with pytest.raises(ValueError, match="'none', 'tanh' or 'sigmoid'"):
        gelu_ext.geglu(x, x, "bogus")
    with pytest.raises(ValueError, match="even"):
        gelu_ext.GEGLU()(torch.ones(2, 5, device=device))
    with pytest.raises(RuntimeError, match="last dimension of 'h' .* must be even"):
        gelu_ext.geglu_packed(torch.ones(2, 5, device=device))
    with pytest.raises(RuntimeError, match="last dimension of 'h' .* must be even"):
        gelu_ext.geglu_packed(torch.tensor(1.0, device=device))
    with pytest.raises(TypeError, match="floating-point"):
        gelu_ext.geglu_packed(torch.ones(2, 4, dtype=torch.long, device=device))
    with pytest.raises(RuntimeError, match="shape of half of 'h'"):
        ops.geglu_packed_backward(torch.ones(2, 4, device=device), torch.ones(2, 4, device=device))
    with pytest.raises(TypeError, match="same dtype"):
        ops.geglu_packed_backward(torch.ones(2, 2, device=device).double(),
                                  torch.ones(2, 4, device=device))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_opcheck(device, approximate, dtype):
    x = randn(6, 5, dtype=dtype, device=device).requires_grad_()
    b = randn(5, dtype=dtype, device=device, seed=1).requires_grad_()
    u = randn(6, 5, dtype=dtype, device=device, seed=2).requires_grad_()
    g = randn(6, 5, dtype=dtype, device=device, seed=3).requires_grad_()
    torch.library.opcheck(ops.bias_gelu.default, (x, b, approximate))
    torch.library.opcheck(ops.bias_gelu_backward.default, (g, x, b, approximate))
    torch.library.opcheck(ops.geglu.default, (x, u, approximate))
    torch.library.opcheck(ops.geglu_backward.default, (g, x, u, approximate))
    h = randn(6, 10, dtype=dtype, device=device)
    torch.library.opcheck(ops.geglu.default, (*h.chunk(2, dim=-1), approximate))
    torch.library.opcheck(ops.geglu_packed.default, (h.requires_grad_(), approximate))
    torch.library.opcheck(ops.geglu_packed_backward.default, (g, h, approximate))


def test_compile_without_graph_breaks(device):
    torch._dynamo.reset()
    model = torch.nn.Sequential(torch.nn.Linear(8, 32, bias=False), gelu_ext.BiasGELU(32),
                                torch.nn.Linear(32, 32), gelu_ext.GEGLU("tanh"),
                                torch.nn.Linear(16, 4)).to(device)
    x = torch.randn(7, 8, device=device)
    explanation = torch._dynamo.explain(model)(x)
    assert explanation.graph_break_count == 0
    compiled = torch.compile(model, fullgraph=True)
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-6, atol=1e-6)
    compiled(x).sum().backward()
    torch._dynamo.reset()


def test_vmap(device):
    x = randn(3, 4, 5, device=device)
    b = randn(5, device=device, seed=1)
    torch.testing.assert_close(torch.func.vmap(lambda t: gelu_ext.bias_gelu(t, b))(x),
                               gelu_ext.bias_gelu(x, b))
    biases = randn(3, 5, device=device, seed=2)
    per_bias = torch.func.vmap(lambda t, bb: gelu_ext.bias_gelu(t, bb))(x, biases)
    torch.testing.assert_close(per_bias, torch.stack([gelu_ext.bias_gelu(x[i], biases[i])
                                                      for i in range(3)]))
    up = randn(3, 4, 5, device=device, seed=3)
    torch.testing.assert_close(torch.func.vmap(gelu_ext.geglu, in_dims=(0, 0))(x, up),
                               gelu_ext.geglu(x, up))
    h = randn(4, 3, 6, device=device, seed=4)
    torch.testing.assert_close(torch.func.vmap(gelu_ext.geglu_packed, in_dims=1)(h),
                               gelu_ext.geglu_packed(h.movedim(1, 0)))
    grads = torch.func.vmap(torch.func.grad(lambda t: gelu_ext.geglu_packed(t).sum()))(h)
    torch.testing.assert_close(grads, ops.geglu_packed_backward(torch.ones(4, 3, 3), h))
    grads = torch.func.vmap(torch.func.grad(lambda t: gelu_ext.bias_gelu(t, b).sum()))(x)
    torch.testing.assert_close(grads, torch.ops.gelu_ext.bias_gelu_backward(
        torch.ones_like(x), x, b)[0])


def test_modules():
    m = gelu_ext.BiasGELU(6, approximate="tanh")
    assert "features=6" in repr(m) and "approximate='tanh'" in repr(m)
    assert isinstance(m.bias, torch.nn.Parameter) and m.bias.shape == (6,)
    assert "approximate='none'" in repr(gelu_ext.GEGLU())
