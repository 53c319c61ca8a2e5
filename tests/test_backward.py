"""Values of the backward ops against float64 references: gelu_backward (grad * f') and
gelu_double_backward (gg * f', gg * grad * f'')."""

import math

import pytest
import torch
from conftest import (FIRST_DERIVATIVE_ULPS, FLOAT_DTYPES, HALF_DTYPES, SECOND_DERIVATIVE_ULPS,
                      MpValues, all_values, assert_within, binade_samples,
                      single_path_edges_f64)

import gelu_ext  # noqa: F401
from gelu_ext.reference import derivative_scales, torch_reference

ops = torch.ops.gelu_ext


def inputs(dtype):
    if dtype in HALF_DTYPES:
        x = all_values(dtype)
        return x[x.isfinite()]
    return torch.cat([binade_samples(dtype, per_binade=8),
                      torch.linspace(-40, 10, 20001, dtype=torch.float64).to(dtype)])


@pytest.mark.parametrize("dtype", [torch.float32, *HALF_DTYPES])
def test_first_derivative(device, approximate, dtype):
    x = inputs(dtype)
    one = torch.ones_like(x)
    y = ops.gelu_backward(one.to(device), x.to(device), approximate).cpu()
    _, d1, _ = torch_reference(x, approximate)
    scale, _ = derivative_scales(x, approximate)
    assert_within(y, d1, scale, FIRST_DERIVATIVE_ULPS[dtype], dtype, f"{dtype} {approximate}", x)


@pytest.mark.parametrize("dtype", [torch.float32, *HALF_DTYPES])
def test_backward_scales_by_grad(device, approximate, dtype):
    # grad * f'(x) is rounded once: within the bound of f' of the exact product.
    x = inputs(dtype)
    g = torch.Generator().manual_seed(1)
    grad = (torch.randn(x.shape, generator=g) * 4).to(dtype)
    y = ops.gelu_backward(grad.to(device), x.to(device), approximate).cpu()
    _, d1, _ = torch_reference(x, approximate)
    scale, _ = derivative_scales(x, approximate)
    gd = grad.double()
    assert_within(y, gd * d1, gd.abs() * scale, FIRST_DERIVATIVE_ULPS[dtype], dtype,
                  f"{dtype} {approximate}", x)


@pytest.mark.parametrize("dtype", [torch.float32, *HALF_DTYPES])
def test_double_backward(device, approximate, dtype):
    x = inputs(dtype)
    g = torch.Generator().manual_seed(2)
    gg = (torch.randn(x.shape, generator=g) * 4).to(dtype)
    grad = (torch.randn(x.shape, generator=g) * 4).to(dtype)
    ggrad, gx = ops.gelu_double_backward(gg.to(device), grad.to(device), x.to(device), approximate)
    _, d1, d2 = torch_reference(x, approximate)
    s1, s2 = derivative_scales(x, approximate)
    g1, g2 = gg.double(), gg.double() * grad.double()
    assert_within(ggrad.cpu(), g1 * d1, g1.abs() * s1, FIRST_DERIVATIVE_ULPS[dtype], dtype,
                  f"grad_grad_output {dtype} {approximate}", x)
    assert_within(gx.cpu(), g2 * d2, g2.abs() * s2, SECOND_DERIVATIVE_ULPS[dtype], dtype,
                  f"grad_input {dtype} {approximate}", x)


def test_float64_derivatives_against_mpmath(device, approximate):
    x = torch.cat([binade_samples(torch.float64, per_binade=1)[::16],
                   torch.linspace(-40, 10, 201, dtype=torch.float64), single_path_edges_f64()])
    x = x[x.abs() < 1e300]
    one = torch.ones_like(x).to(device)
    d1 = ops.gelu_backward(one, x.to(device), approximate).cpu()
    _, d2 = ops.gelu_double_backward(one, one, x.to(device), approximate)
    exact1, exact2 = MpValues.of(x, approximate, 1, 2)
    s1, s2 = derivative_scales(x, approximate)
    assert_within(d1, exact1, s1, FIRST_DERIVATIVE_ULPS[torch.float64], torch.float64,
                  f"float64 f' {approximate}", x)
    assert_within(d2.cpu(), exact2, s2, SECOND_DERIVATIVE_ULPS[torch.float64], torch.float64,
                  f"float64 f'' {approximate}", x)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_derivatives_at_non_finite_and_huge(device, approximate, dtype):
    big = torch.finfo(dtype).max
    x = torch.tensor([math.inf, big, -math.inf, -big, math.nan], dtype=dtype, device=device)
    one = torch.ones_like(x)
    d1 = ops.gelu_backward(one, x, approximate).cpu()
    _, d2 = ops.gelu_double_backward(one, one, x, approximate)
    assert d1[:4].tolist() == [1.0, 1.0, 0.0, 0.0], "f' must be 1 at +inf and max, 0 at -inf"
    assert d2.cpu()[:4].tolist() == [0.0] * 4
    assert d1[4].isnan() and d2[4].cpu().isnan()
