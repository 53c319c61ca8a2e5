"""What torch needs to know about the C++ ops beyond their kernels: fake (meta) kernels for
torch.compile, reverse-mode autograd to second order, and vmap rules.

The ops (defined in csrc/ops.cpp):
  gelu(input, approximate)                                  -> y
  gelu_backward(grad_output, input, approximate)            -> grad_output * gelu'(input)
  gelu_double_backward(grad_grad_input, grad_output, input, approximate)
      -> (grad_grad_input * gelu'(input), grad_grad_input * grad_output * gelu''(input))
  bias_gelu(input, bias, approximate)                       -> gelu(input + bias)
  bias_gelu_backward(grad_output, input, bias, approximate) -> (grad_input, grad_bias)
  geglu(gate, up, approximate)                              -> gelu(gate) * up
  geglu_backward(grad_output, gate, up, approximate)        -> (grad_gate, grad_up)
  geglu_packed(h, approximate)                              -> geglu(*h.chunk(2, -1))
  geglu_packed_backward(grad_output, h, approximate)        -> grad_h = [grad_gate, grad_up]
"""

import types

import torch
from torch._prims_common import compute_elementwise_output_strides

from . import _C  # noqa: F401  (registers the ops)
from ._derivatives import DERIVATIVES, refuse_third_order

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


def _check_same_dtype_and_device(op, name, t, other_name, other):
    torch._check_type(t.dtype == other.dtype, lambda: f"{op}: '{name}' and '{other_name}' must "
                      f"have the same dtype, but got {t.dtype} and {other.dtype}")
    torch._check(t.device == other.device, lambda: f"{op}: '{name}' and '{other_name}' must be "
                 f"on the same device, but got {t.device} and {other.device}")


def _check_matches(op, name, t, other_name, other):
    _check_floating(op, name, t)
    torch._check(t.shape == other.shape, lambda: f"{op}: '{name}' and '{other_name}' must have "
                 f"the same shape, but got {list(t.shape)} and {list(other.shape)}")
    _check_same_dtype_and_device(op, name, t, other_name, other)


def _check_matches_input(op, name, t, input):
    _check_matches(op, name, t, "input", input)


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


def _check_bias(op, bias, input):
    _check_floating(op, "bias", bias)
    _check_same_dtype_and_device(op, "bias", bias, "input", input)
    torch._check(bias.dim() == 1, lambda: f"{op}: 'bias' must be 1-D, but got {bias.dim()} "
                 f"dimensions (shape {list(bias.shape)})")
    torch._check(input.dim() >= 1 and bias.shape[0] == input.shape[-1],
                 lambda: f"{op}: 'bias' must have as many elements as the last dimension of "
                         f"'input', but got {bias.shape[0]} and input shape {list(input.shape)}")


@torch.library.register_fake("gelu_ext::bias_gelu")
def _bias_gelu_fake(input, bias, approximate="none"):
    _check_floating("gelu_ext.bias_gelu", "input", input)
    _check_bias("gelu_ext.bias_gelu", bias, input)
    check_approximate(approximate)
    return _empty_elementwise_output(input, bias.expand(input.shape))


@torch.library.register_fake("gelu_ext::bias_gelu_backward")
def _bias_gelu_backward_fake(grad_output, input, bias, approximate="none"):
    op = "gelu_ext.bias_gelu_backward"
    _check_floating(op, "input", input)
    _check_matches_input(op, "grad_output", grad_output, input)
    _check_bias(op, bias, input)
    check_approximate(approximate)
    return _empty_elementwise_output(grad_output, input, bias.expand(input.shape)), \
        torch.empty_like(bias, memory_format=torch.contiguous_format)


def _check_geglu(op, gate, **others):
    _check_floating(op, "gate", gate)
    for name, t in others.items():
        _check_matches(op, name, t, "gate", gate)


@torch.library.register_fake("gelu_ext::geglu")
def _geglu_fake(gate, up, approximate="none"):
    _check_geglu("gelu_ext.geglu", gate, up=up)
    check_approximate(approximate)
    return _empty_elementwise_output(gate, up)


@torch.library.register_fake("gelu_ext::geglu_backward")
def _geglu_backward_fake(grad_output, gate, up, approximate="none"):
    _check_geglu("gelu_ext.geglu_backward", gate, up=up, grad_output=grad_output)
    check_approximate(approximate)
    return (_empty_elementwise_output(grad_output, gate, up),
            _empty_elementwise_output(grad_output, gate, up))


def _packed_halves(op, h):
    _check_floating(op, "h", h)
    torch._check(h.dim() >= 1 and h.shape[-1] % 2 == 0, lambda: f"{op}: the last dimension of "
                 f"'h' (gate and up side by side) must be even, but got shape {list(h.shape)}")
    return h.chunk(2, dim=-1)


@torch.library.register_fake("gelu_ext::geglu_packed")
def _geglu_packed_fake(h, approximate="none"):
    gate, up = _packed_halves("gelu_ext.geglu_packed", h)
    check_approximate(approximate)
    return _empty_elementwise_output(gate, up)


@torch.library.register_fake("gelu_ext::geglu_packed_backward")
def _geglu_packed_backward_fake(grad_output, h, approximate="none"):
    op = "gelu_ext.geglu_packed_backward"
    gate, _ = _packed_halves(op, h)
    _check_floating(op, "grad_output", grad_output)
    torch._check(grad_output.shape == gate.shape, lambda: f"{op}: 'grad_output' must have the "
                 f"shape of half of 'h', {list(gate.shape)}, but got {list(grad_output.shape)}")
    _check_same_dtype_and_device(op, "grad_output", grad_output, "h", h)
    check_approximate(approximate)
    return torch.empty(h.shape, dtype=h.dtype, device=h.device)


# --------------------------------------------------------------------------------------------
# Reverse-mode autograd: gelu -> gelu_backward -> gelu_double_backward, whose own derivatives
# (third order) are refused; the fused ops' backward ops differentiate to second order. The
# formulas (_derivatives.py) call the ops themselves here, so that each order's gradient is
# differentiable through the autograd registered for the next.

_OPS_THEMSELVES = types.SimpleNamespace(**{name: getattr(_ops, name).default
                                           for name in DERIVATIVES})


def _register_autograd(name, vjp):
    keeps_inputs = vjp is not refuse_third_order

    def setup_context(ctx, inputs, output):
        *tensors, ctx.approximate = inputs
        if keeps_inputs:
            ctx.save_for_backward(*tensors)

    def backward(ctx, *grads):
        return (*vjp(_OPS_THEMSELVES, ctx.approximate, ctx.saved_tensors, *grads), None)

    torch.library.register_autograd(f"gelu_ext::{name}", backward, setup_context=setup_context)


for _name, (_vjp, _) in DERIVATIVES.items():
    _register_autograd(_name, _vjp)


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


@torch.library.register_vmap("gelu_ext::geglu")
def _geglu_vmap(info, in_dims, gate, up, approximate="none"):
    gate, up = _batched(info, in_dims[:2], gate, up)
    out_dim = None if all(d is None for d in in_dims[:2]) else 0
    return _ops.geglu.default(gate, up, approximate), out_dim


@torch.library.register_vmap("gelu_ext::geglu_backward")
def _geglu_backward_vmap(info, in_dims, grad_output, gate, up, approximate="none"):
    tensors = _batched(info, in_dims[:3], grad_output, gate, up)
    out_dim = None if all(d is None for d in in_dims[:3]) else 0
    return _ops.geglu_backward.default(*tensors, approximate), (out_dim, out_dim)


@torch.library.register_vmap("gelu_ext::geglu_packed")
def _geglu_packed_vmap(info, in_dims, h, approximate="none"):
    (h,) = _batched(info, in_dims[:1], h)
    out_dim = None if in_dims[0] is None else 0
    return _ops.geglu_packed.default(h, approximate), out_dim


@torch.library.register_vmap("gelu_ext::geglu_packed_backward")
def _geglu_packed_backward_vmap(info, in_dims, grad_output, h, approximate="none"):
    tensors = _batched(info, in_dims[:2], grad_output, h)
    out_dim = None if all(d is None for d in in_dims[:2]) else 0
    return _ops.geglu_packed_backward.default(*tensors, approximate), out_dim


@torch.library.register_vmap("gelu_ext::bias_gelu")
def _bias_gelu_vmap(info, in_dims, input, bias, approximate="none"):
    input_dim, bias_dim = in_dims[:2]
    if bias_dim is None:  # one bias for every batch member: it still broadcasts
        return _ops.bias_gelu.default(input.movedim(input_dim, 0) if input_dim is not None
                                      else input, bias, approximate), \
            (0 if input_dim is not None else None)
    # A bias per batch member: one call each.
    input = input.movedim(input_dim, 0) if input_dim is not None else \
        input.expand(info.batch_size, *input.shape)
    bias = bias.movedim(bias_dim, 0)
    return torch.stack([_ops.bias_gelu.default(i, b, approximate) for i, b in zip(input, bias)]), 0


@torch.library.register_vmap("gelu_ext::bias_gelu_backward")
def _bias_gelu_backward_vmap(info, in_dims, grad_output, input, bias, approximate="none"):
    grad_output, input = _batched(info, (in_dims[0], in_dims[1]), grad_output, input)
    bias_dim = in_dims[2]
    if in_dims[0] is None and in_dims[1] is None:
        if bias_dim is None:
            return _ops.bias_gelu_backward.default(grad_output, input, bias, approximate), \
                (None, None)
        grad_output = grad_output.expand(info.batch_size, *grad_output.shape)
        input = input.expand(info.batch_size, *input.shape)
    biases = bias.movedim(bias_dim, 0) if bias_dim is not None else [bias] * info.batch_size
    results = [_ops.bias_gelu_backward.default(g, i, b, approximate)
               for g, i, b in zip(grad_output, input, biases)]
    return (torch.stack([r[0] for r in results]), torch.stack([r[1] for r in results])), (0, 0)


@torch.library.register_vmap("gelu_ext::gelu_double_backward")
def _gelu_double_backward_vmap(info, in_dims, grad_grad_input, grad_output, input,
                               approximate="none"):
    tensors = _batched(info, in_dims[:3], grad_grad_input, grad_output, input)
    out_dim = None if all(d is None for d in in_dims[:3]) else 0
    return _ops.gelu_double_backward.default(*tensors, approximate), (out_dim, out_dim)
