"""Autocast, no_grad and inference_mode, with and without gelu_ext swapped in."""

import pytest
import torch
from torch import nn

import gelu_ext


def model(activation):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), activation, nn.Linear(64, 8))


def test_cpu_autocast_bfloat16(approximate):
    ours = model(gelu_ext.GELU(approximate))
    x = torch.randn(16, 32, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        hidden = ours[0](x)
        activated = ours[1](hidden)
        out = ours[2](activated)
    assert hidden.dtype == activated.dtype == torch.bfloat16
    out.float().sum().backward()
    assert x.grad is not None and x.grad.isfinite().all()


def test_autocast_matches_nn_gelu():
    x = torch.randn(16, 32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ours = model(gelu_ext.GELU())(x)
        theirs = model(nn.GELU())(x)
    assert ours.dtype == theirs.dtype
    torch.testing.assert_close(ours, theirs, rtol=2e-2, atol=2e-2)


def test_no_grad(device):
    x = torch.randn(100, device=device, requires_grad=True)
    with torch.no_grad():
        y = gelu_ext.gelu(x)
    assert not y.requires_grad
    torch.testing.assert_close(y, gelu_ext.gelu(x.detach()), rtol=0, atol=0)


def test_inference_mode(device, approximate):
    with torch.inference_mode():
        x = torch.randn(100, device=device)
        y = gelu_ext.gelu(x, approximate)
        y_module = gelu_ext.GELU(approximate)(x)
    assert y.is_inference() and not y.requires_grad
    torch.testing.assert_close(y, y_module, rtol=0, atol=0)


def test_fused_modules_under_autocast(approximate):
    # nn.Linear(bias=False) makes bfloat16 under autocast; BiasGELU's float32 bias is cast to it,
    # as autocast casts nn.Linear's own bias, and its gradient comes back in float32.
    torch.manual_seed(0)
    projection, activation = nn.Linear(32, 64, bias=False), gelu_ext.BiasGELU(64, approximate)
    with torch.no_grad():
        activation.bias.normal_()
    x = torch.randn(16, 32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        hidden = projection(x)
        y = activation(hidden)
        packed = gelu_ext.GEGLU(approximate)(projection(x))
    assert hidden.dtype == y.dtype == packed.dtype == torch.bfloat16
    b16 = activation.bias.detach().to(torch.bfloat16).requires_grad_()
    expected = gelu_ext.bias_gelu(hidden.detach(), b16, approximate)
    torch.testing.assert_close(y, expected, rtol=0, atol=0)
    grad = torch.randn_like(y)
    y.backward(grad)
    expected.backward(grad)
    assert activation.bias.grad.dtype == torch.float32
    torch.testing.assert_close(activation.bias.grad, b16.grad.float(), rtol=0, atol=0)
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
