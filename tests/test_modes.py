"""Autocast, no_grad and inference_mode, with and without gelu_ext swapped in."""

import pytest
import torch
from conftest import (CORRECTLY_ROUNDED, FORWARD_ULPS, assert_same_bits, assert_ulps, assert_within,
                      mp_exact, requires_cuda)
from torch import nn

import gelu_ext
from gelu_ext.reference import reference_and_scales, torch_reference, ulp


def model(activation):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), activation, nn.Linear(64, 8))


AUTOCAST = [("cpu", torch.bfloat16), ("cpu", torch.float16),
            pytest.param("cuda", torch.float16, marks=requires_cuda),
            pytest.param("cuda", torch.bfloat16, marks=requires_cuda)]


def enter_autocast(device_type, dtype):
    """torch.autocast, or a skip where this torch does not autocast to dtype on that device
    (it then warns and leaves autocast off)."""
    context = torch.autocast(device_type, dtype=dtype)
    context.__enter__()
    if not torch.is_autocast_enabled(device_type):
        context.__exit__(None, None, None)
        pytest.skip(f"torch {torch.__version__} does not autocast to {dtype} on {device_type}")
    return context


@pytest.mark.parametrize("device_type, dtype", AUTOCAST)
def test_autocast(device_type, dtype, approximate):
    """Between autocast's nn.Linear layers the activation runs in their dtype: f(hidden) correctly
    rounded, and in the backward grad * f'(hidden) correctly rounded, with a float32 gradient
    reaching the input."""
    ours = model(gelu_ext.GELU(approximate)).to(device_type)
    x = torch.randn(16, 32, device=device_type, requires_grad=True)
    context = enter_autocast(device_type, dtype)
    try:
        hidden = ours[0](x)
        activated = ours[1](hidden)
        out = ours[2](activated)
    finally:
        context.__exit__(None, None, None)
    assert hidden.dtype == activated.dtype == out.dtype == dtype
    hidden.retain_grad()
    activated.retain_grad()
    out.float().sum().backward()
    assert x.grad.dtype == torch.float32 and x.grad.isfinite().all()
    h = hidden.detach().cpu().double()
    f, d1, _, s1, _ = reference_and_scales(h, approximate)
    assert_ulps(activated.detach().cpu(), f, CORRECTLY_ROUNDED, "activation", h,
                mp_exact(h, approximate, 0))
    g = activated.grad.cpu().double()
    assert_within(hidden.grad.cpu(), d1 * g, s1 * g.abs(), CORRECTLY_ROUNDED, dtype,
                  "activation gradient", h, mp_exact(h, approximate, 1, g))


@pytest.mark.parametrize("device_type, dtype", AUTOCAST)
def test_autocast_matches_nn_gelu(device_type, dtype):
    """gelu_ext.GELU() is nn.GELU()'s function under autocast too: their activations of the same
    hidden layer agree to 1 ulp of the dtype (nn.GELU rounds a float result), where the tanh form,
    the nearest other function, does not."""
    # Fixed inputs (model() fixes the weights): drawn from the global generator, whether the
    # tanh form showed depended on the tests run before.
    x = torch.randn(64, 32, generator=torch.Generator().manual_seed(1))
    layer = model(nn.GELU())[0]
    context = enter_autocast(device_type, dtype)
    try:
        hidden = layer.to(device_type)(x.to(device_type))
        activations = {name: m(hidden) for name, m in [("ours", gelu_ext.GELU()), ("nn", nn.GELU()),
                                                      ("tanh", gelu_ext.GELU("tanh"))]}
    finally:
        context.__exit__(None, None, None)
    assert activations["ours"].dtype == activations["nn"].dtype == dtype
    theirs = activations["nn"].cpu().double()
    unit = ulp(theirs, dtype)
    apart = {name: ((a.cpu().double() - theirs).abs() / unit).max().item()
             for name, a in activations.items()}
    assert apart["ours"] <= 1, apart
    assert apart["tanh"] > 1, f"the check cannot tell the forms apart: {apart}"


def test_no_grad(device):
    """Under no_grad the op runs without a graph: the values of the differentiable path (outside
    no_grad, through autograd), bit for bit, and within float32's bound of the reference."""
    x = (torch.randn(4099, device=device) * 4).requires_grad_()
    with torch.no_grad():
        y = gelu_ext.gelu(x)
    assert not y.requires_grad and y.grad_fn is None
    tracked = gelu_ext.gelu(x)
    assert tracked.grad_fn is not None
    assert_same_bits(y, tracked.detach(), "no_grad against autograd")
    xd = x.detach().cpu()
    assert_ulps(y.cpu(), torch_reference(xd)[0], FORWARD_ULPS[torch.float32], "no_grad", xd)


def test_inference_mode(device, approximate):
    with torch.inference_mode():
        x = torch.randn(100, device=device)
        y = gelu_ext.gelu(x, approximate)
        y_module = gelu_ext.GELU(approximate)(x)
    assert y.is_inference() and not y.requires_grad
    torch.testing.assert_close(y, y_module, rtol=0, atol=0)


@pytest.mark.parametrize("device_type, dtype", AUTOCAST)
def test_fused_modules_under_autocast(device_type, dtype, approximate):
    # nn.Linear(bias=False) makes the autocast dtype; BiasGELU's float32 bias is cast to it, as
    # autocast casts nn.Linear's own bias, and its gradient comes back in float32.
    torch.manual_seed(0)
    projection = nn.Linear(32, 64, bias=False).to(device_type)
    activation = gelu_ext.BiasGELU(64, approximate).to(device_type)
    with torch.no_grad():
        activation.bias.normal_()
    x = torch.randn(16, 32, device=device_type)
    context = enter_autocast(device_type, dtype)
    try:
        hidden = projection(x)
        y = activation(hidden)
        packed = gelu_ext.GEGLU(approximate)(projection(x))
    finally:
        context.__exit__(None, None, None)
    assert hidden.dtype == y.dtype == packed.dtype == dtype
    cast = activation.bias.detach().to(dtype).requires_grad_()
    expected = gelu_ext.bias_gelu(hidden.detach(), cast, approximate)
    assert_same_bits(y, expected, "bias_gelu")
    assert_same_bits(packed, gelu_ext.geglu_packed(hidden.detach(), approximate), "geglu_packed")
    grad = torch.randn_like(y)
    y.backward(grad)
    expected.backward(grad)
    assert activation.bias.grad.dtype == torch.float32
    assert_same_bits(activation.bias.grad, cast.grad.float(), "bias gradient")
    # Outside autocast, operands of different dtypes are still refused.
    with pytest.raises(TypeError, match="same dtype"):
        gelu_ext.bias_gelu(hidden.detach(), activation.bias)


def test_meta_tensors(approximate):
    # Models built on the meta device (deferred initialization) run a forward and backward for
    # shapes alone: every function and module must accept meta tensors and give the shapes and
    # dtypes that real ones get.
    x = torch.empty(4, 6, device="meta", dtype=torch.bfloat16, requires_grad=True)
    bias = torch.empty(6, device="meta", dtype=torch.bfloat16, requires_grad=True)
    outputs = [gelu_ext.gelu(x, approximate), gelu_ext.bias_gelu(x, bias, approximate),
               gelu_ext.geglu(x, x, approximate), gelu_ext.geglu_packed(x, approximate),
               gelu_ext.GELU(approximate)(x), gelu_ext.GEGLU(approximate)(x),
               gelu_ext.BiasGELU(6, approximate, device="meta", dtype=torch.bfloat16)(x)]
    assert [tuple(y.shape) for y in outputs] == [(4, 6)] * 3 + [(4, 3)] + [(4, 6), (4, 3), (4, 6)]
    for i, y in enumerate(outputs):
        assert y.device.type == "meta" and y.dtype == torch.bfloat16
        grad_x, grad_bias = torch.autograd.grad(y.sum(), (x, bias), allow_unused=True)
        assert grad_x.shape == x.shape and grad_x.device.type == "meta"
        if i == 1:
            assert grad_bias.shape == bias.shape and grad_bias.device.type == "meta"
