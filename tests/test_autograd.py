"""Autograd to second order in both modes, batched gradients, torch.func transforms, and opcheck on
every op: everything PyTorch's OpInfo for nn.functional.gelu says F.gelu supports."""

import pytest
import torch
import torch.nn.functional as F
from torch.autograd import gradcheck, gradgradcheck

import gelu_ext
from gelu_ext.reference import SIGMOID_SCALE

ops = torch.ops.gelu_ext


def torch_gelu(x, approximate):
    """The same function built from torch ops, differentiable by torch in every mode."""
    if approximate == "sigmoid":
        return x * torch.sigmoid(float(SIGMOID_SCALE) * x)
    return F.gelu(x, approximate=approximate)


def sample(device, n=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g, dtype=torch.float64) * 3
    return x.to(device)


def test_gradcheck(device, approximate):
    x = sample(device).requires_grad_()
    assert gradcheck(lambda t: gelu_ext.gelu(t, approximate), x, check_forward_ad=True,
                     check_backward_ad=True, check_batched_grad=True,
                     check_batched_forward_grad=True)


def test_gradgradcheck(device, approximate):
    x = sample(device).requires_grad_()
    assert gradgradcheck(lambda t: gelu_ext.gelu(t, approximate), x, check_fwd_over_rev=True,
                         check_rev_over_rev=True, check_batched_grad=True)


def test_gradcheck_on_the_ops(device, approximate):
    # torch.ops.gelu_ext.* are differentiable on their own, through torch.library.register_autograd.
    x = sample(device).requires_grad_()
    g = sample(device, seed=1).requires_grad_()
    assert gradcheck(lambda t: ops.gelu(t, approximate), x, check_batched_grad=True)
    assert gradgradcheck(lambda t: ops.gelu(t, approximate), x, check_batched_grad=True)
    assert gradcheck(lambda gr, t: ops.gelu_backward(gr, t, approximate), (g, x))


def test_third_order_is_refused():
    x = sample("cpu").requires_grad_()
    (d1,) = torch.autograd.grad(ops.gelu(x).sum(), x, create_graph=True)
    (d2,) = torch.autograd.grad(d1.sum(), x, create_graph=True)
    with pytest.raises(NotImplementedError, match="third order"):
        torch.autograd.grad(d2.sum(), x)


def test_jvp_matches_torch(device, approximate):
    x, t = sample(device), sample(device, seed=1)
    y, dy = torch.func.jvp(lambda u: gelu_ext.gelu(u, approximate), (x,), (t,))
    y_ref, dy_ref = torch.func.jvp(lambda u: torch_gelu(u, approximate), (x,), (t,))
    torch.testing.assert_close(y, y_ref, rtol=1e-13, atol=1e-15)
    torch.testing.assert_close(dy, dy_ref, rtol=1e-13, atol=1e-15)


def test_vmap_matches_torch(device, approximate):
    x = sample(device, n=60).view(5, 12)
    torch.testing.assert_close(torch.func.vmap(lambda u: gelu_ext.gelu(u, approximate))(x),
                               torch_gelu(x, approximate), rtol=1e-13, atol=1e-15)
    # batch dimension not in front, and in_dims mixing batched and unbatched operands
    y = torch.func.vmap(lambda u: gelu_ext.gelu(u, approximate), in_dims=1, out_dims=1)(x)
    torch.testing.assert_close(y, torch_gelu(x, approximate), rtol=1e-13, atol=1e-15)
    grad = sample(device, seed=3)
    dx = torch.func.vmap(lambda u: ops.gelu_backward(grad, u, approximate))(x)
    torch.testing.assert_close(dx, torch.stack([ops.gelu_backward(grad, r, approximate) for r in x]))


def test_hessian_and_nested_transforms(device, approximate):
    x = sample(device)
    f = lambda u: gelu_ext.gelu(u, approximate).sum()  # noqa: E731
    f_ref = lambda u: torch_gelu(u, approximate).sum()  # noqa: E731
    for transform in (torch.func.hessian,
                      lambda fn: torch.func.jacrev(torch.func.jacrev(fn)),
                      lambda fn: torch.func.jacfwd(torch.func.jacrev(fn))):
        torch.testing.assert_close(transform(f)(x), transform(f_ref)(x), rtol=1e-12, atol=1e-14)
    per_sample = torch.func.vmap(torch.func.grad(f))(x.view(3, 4))
    torch.testing.assert_close(per_sample, torch.func.vmap(torch.func.grad(f_ref))(x.view(3, 4)))


OPCHECK_DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", OPCHECK_DTYPES)
def test_opcheck(device, approximate, dtype):
    g = torch.Generator().manual_seed(0)
    shapes = [(5, 7), (), (0, 3)]
    for shape in shapes:
        def rand(requires_grad=False):
            t = torch.randn(shape, generator=g).to(dtype).to(device)
            return t.requires_grad_(requires_grad) if dtype.is_floating_point else t
        x, grad, gg = rand(True), rand(True), rand()
        torch.library.opcheck(ops.gelu.default, (x, approximate))
        torch.library.opcheck(ops.gelu_backward.default, (grad, x, approximate))
        # Its own backward would be third order, which is refused (test_third_order_is_refused).
        torch.library.opcheck(ops.gelu_double_backward.default,
                              (gg, grad.detach(), x.detach(), approximate))
    xt = torch.randn(6, 4, generator=g).to(dtype).to(device).t().requires_grad_()
    torch.library.opcheck(ops.gelu.default, (xt, approximate))
    torch.library.opcheck(ops.gelu_backward.default, (torch.ones_like(xt), xt, approximate))


def test_vmap_over_a_captured_tensor_that_requires_grad(device, approximate):
    # Inside vmap, an operand from outside (a weight, here) that requires grad: autograd records
    # the call under the transform, and the gradient sums over the batch.
    w = sample(device, n=6, seed=4).requires_grad_()
    x = sample(device, n=24, seed=5).view(4, 6)
    cases = [
        (lambda r: gelu_ext.gelu(w, approximate) * r, lambda r: torch_gelu(w, approximate) * r),
        (lambda r: gelu_ext.bias_gelu(r, w, approximate),
         lambda r: torch_gelu(r + w, approximate)),
        (lambda r: gelu_ext.geglu(w, r, approximate), lambda r: torch_gelu(w, approximate) * r),
    ]
    for ours, theirs in cases:
        (got,) = torch.autograd.grad(torch.func.vmap(ours)(x).sum(), w)
        (expected,) = torch.autograd.grad(torch.func.vmap(theirs)(x).sum(), w)
        # sums over the batch, as in test_hessian_and_nested_transforms
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-14)
