"""What torch needs to know about the C++ ops beyond their kernels: fake (meta) kernels for
torch.compile, reverse-mode autograd to second order, and vmap rules.

The ops (defined in csrc/ops.cpp):
  gelu(input, approximate)                                  -> y
  gelu_backward(grad_output, input, approximate)            -> grad_output * gelu'(input)
  gelu_double_backward(grad_grad_input, grad_output, input, approximate)
      -> (grad_grad_input * gelu'(input), grad_grad_input * grad_output * gelu''(input))
"""

import torch
from torch._prims_common import compute_elementwise_output_strides

from . import _C  # noqa: F401  (registers the ops)

APPROXIMATIONS = ("none", "tanh", "sigmoid")
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

_ops = torch.ops.gelu_ext


def check_approximate(approximate):
    if approximate not in APPROXIMATIONS:
        raise ValueError(
            f"gelu_ext: approximate must be one of 'none', 'tanh' or 'sigmoid', "
            f"but got {approximate!r}")


# --------------------------------------------------------------------------------------------
# Fake kernels: the same checks as csrc/ops.cpp and the output layout of ATen's elementwise ops.

def _check_floating(op, name, t):
    torch._check_type(
        t.dtype in FLOAT_DTYPES,
        lambda: f"{op}: expected '{name}' to be a floating-point tensor (float16, bfloat16, "
                f"float32 or float64), but got {t.dtype}")


def _check_matches_input(op, name, t, input):
    _check_floating(op, name, t)
    torch._check(t.shape == input.shape, lambda: f"{op}: '{name}' and 'input' must have the "
                 f"same shape, but got {list(t.shape)} and {list(input.shape)}")
    torch._check_type(t.dtype == input.dtype, lambda: f"{op}: '{name}' and 'input' must have "
                      f"the same dtype, but got {t.dtype} and {input.dtype}")
    torch._check(t.device == input.device, lambda: f"{op}: '{name}' and 'input' must be on the "
                 f"same device, but got {t.device} and {input.device}")


def _empty_elementwise_output(*tensors):
    like = tensors[-1]
    return torch.empty_strided(like.shape, compute_elementwise_output_strides(*tensors),
                               dtype=like.dtype, device=like.device)


@torch.library.register_fake("gelu_ext::gelu")
def _gelu_fake(input, approximate="none"):
    _check_floating("gelu_ext.gelu", "input", input)
    check_approximate(approximate)
    return _empty_elementwise_output(input)


@torch.library.register_fake("gelu_ext::gelu_backward")
def _gelu_backward_fake(grad_output, input, approximate="none"):
    op = "gelu_ext.gelu_backward"
    _check_floating(op, "input", input)
    _check_matches_input(op, "grad_output", grad_output, input)
    check_approximate(approximate)
    return _empty_elementwise_output(grad_output, input)


@torch.library.register_fake("gelu_ext::gelu_double_backward")
def _gelu_double_backward_fake(grad_grad_input, grad_output, input, approximate="none"):
    op = "gelu_ext.gelu_double_backward"
    _check_floating(op, "input", input)
    _check_matches_input(op, "grad_grad_input", grad_grad_input, input)
    _check_matches_input(op, "grad_output", grad_output, input)
    check_approximate(approximate)
    return (_empty_elementwise_output(grad_grad_input, grad_output, input),
            _empty_elementwise_output(grad_grad_input, grad_output, input))


# --------------------------------------------------------------------------------------------
# Reverse-mode autograd: gelu -> gelu_backward -> gelu_double_backward.

def _gelu_setup_context(ctx, inputs, output):
    input, approximate = inputs
    ctx.save_for_backward(input)
    ctx.approximate = approximate


def _gelu_backward_formula(ctx, grad):
    (input,) = ctx.saved_tensors
    return _ops.gelu_backward.default(grad, input, ctx.approximate), None


def _gelu_backward_setup_context(ctx, inputs, output):
    grad_output, input, approximate = inputs
    ctx.save_for_backward(grad_output, input)
    ctx.approximate = approximate


def _gelu_backward_backward_formula(ctx, grad_grad_input):
    grad_output, input = ctx.saved_tensors
    grad_grad_output, grad_input = _ops.gelu_double_backward.default(
        grad_grad_input, grad_output, input, ctx.approximate)
    return grad_grad_output, grad_input, None


def _third_order_formula(ctx, *grads):
    raise NotImplementedError(
        "gelu_ext: derivatives of third order and above are not implemented")


torch.library.register_autograd("gelu_ext::gelu", _gelu_backward_formula,
                                setup_context=_gelu_setup_context)
torch.library.register_autograd("gelu_ext::gelu_backward", _gelu_backward_backward_formula,
                                setup_context=_gelu_backward_setup_context)
torch.library.register_autograd("gelu_ext::gelu_double_backward", _third_order_formula,
                                setup_context=lambda ctx, inputs, output: None)


# --------------------------------------------------------------------------------------------
# vmap: every op is elementwise over operands of one shape, so batch dimensions are moved to the
# front and unbatched operands are expanded (stride 0, no copy) to the batch size.

def _batched(info, in_dims, *tensors):
    if all(d is None for d in in_dims):
        return tensors
    return tuple(t.movedim(d, 0) if d is not None else t.expand(info.batch_size, *t.shape)
                 for t, d in zip(tensors, in_dims))


@torch.library.register_vmap("gelu_ext::gelu")
def _gelu_vmap(info, in_dims, input, approximate="none"):
    return _ops.gelu.default(input, approximate), in_dims[0]


@torch.library.register_vmap("gelu_ext::gelu_backward")
def _gelu_backward_vmap(info, in_dims, grad_output, input, approximate="none"):
    grad_output, input = _batched(info, in_dims[:2], grad_output, input)
    out_dim = None if all(d is None for d in in_dims[:2]) else 0
    return _ops.gelu_backward.default(grad_output, input, approximate), out_dim


@torch.library.register_vmap("gelu_ext::gelu_double_backward")
def _gelu_double_backward_vmap(info, in_dims, grad_grad_input, grad_output, input,
                               approximate="none"):
    tensors = _batched(info, in_dims[:3], grad_grad_input, grad_output, input)
    out_dim = None if all(d is None for d in in_dims[:3]) else 0
    return _ops.gelu_double_backward.default(*tensors, approximate), (out_dim, out_dim)
