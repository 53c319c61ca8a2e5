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


# The fused ops. Their second order is composed from the gelu ops above, so it is differentiable
# no further than theirs.

def _save_all_setup_context(ctx, inputs, output):
    *tensors, ctx.approximate = inputs
    ctx.save_for_backward(*tensors)


def _bias_gelu_backward_formula(ctx, grad):
    input, bias = ctx.saved_tensors
    grad_input, grad_bias = _ops.bias_gelu_backward.default(grad, input, bias, ctx.approximate)
    return grad_input, grad_bias, None


def exact_bias_sum(input, bias):
    """input + bias in float64, so that 16-bit and float32 sums are not rounded (as in the
    kernels)."""
    return input.double() + bias.double()


def sum_to_bias(t):
    """t summed over all but its last dimension."""
    return t.sum(dim=tuple(range(t.dim() - 1)))


def bias_gelu_second_order(grad_grad_input, grad_grad_bias, grad_output, input, bias,
                           approximate):
    """The gradients for grad_output, input and bias of bias_gelu_backward's outputs
    (grad_input, grad_bias), given theirs."""
    # grad_input = g f'(z) and grad_bias = its sum over rows, z = input + bias: the upstream
    # gradient reaching grad_input is u = grad_grad_input + grad_grad_bias (broadcast).
    u = grad_grad_input + grad_grad_bias
    d_grad, d_z = _ops.gelu_double_backward.default(u.double(), grad_output.double(),
                                                    exact_bias_sum(input, bias), approximate)
    return (d_grad.to(grad_output.dtype), d_z.to(input.dtype), sum_to_bias(d_z).to(bias.dtype))


def _bias_gelu_backward_backward_formula(ctx, grad_grad_input, grad_grad_bias):
    return (*bias_gelu_second_order(grad_grad_input, grad_grad_bias, *ctx.saved_tensors,
                                    ctx.approximate), None)


def _geglu_backward_formula(ctx, grad):
    gate, up = ctx.saved_tensors
    grad_gate, grad_up = _ops.geglu_backward.default(grad, gate, up, ctx.approximate)
    return grad_gate, grad_up, None


def geglu_second_order(a, c, grad_output, gate, up, approx):
    """The gradients for grad_output, gate and up of geglu_backward's outputs (grad_gate,
    grad_up), given theirs (a and c)."""
    # grad_gate = g u f'(x), grad_up = g f(x).
    d_grad = _ops.gelu_backward.default(a * up, gate, approx) + c * _ops.gelu.default(gate, approx)
    _, d_gate_curvature = _ops.gelu_double_backward.default(a * up, grad_output, gate, approx)
    d_gate = d_gate_curvature + _ops.gelu_backward.default(c * grad_output, gate, approx)
    d_up = _ops.gelu_backward.default(a * grad_output, gate, approx)
    return d_grad, d_gate, d_up


def _geglu_backward_backward_formula(ctx, a, c):
    grad_output, gate, up = ctx.saved_tensors
    return (*geglu_second_order(a, c, grad_output, gate, up, ctx.approximate), None)


def _geglu_packed_backward_formula(ctx, grad):
    (h,) = ctx.saved_tensors
    return _ops.geglu_packed_backward.default(grad, h, ctx.approximate), None


def geglu_packed_second_order(grad_grad_h, grad_output, h, approximate):
    d_grad, d_gate, d_up = geglu_second_order(*grad_grad_h.chunk(2, dim=-1), grad_output,
                                              *h.chunk(2, dim=-1), approximate)
    return d_grad, torch.cat([d_gate, d_up], dim=-1)


def _geglu_packed_backward_backward_formula(ctx, grad_grad_h):
    return (*geglu_packed_second_order(grad_grad_h, *ctx.saved_tensors, ctx.approximate), None)


torch.library.register_autograd("gelu_ext::bias_gelu", _bias_gelu_backward_formula,
                                setup_context=_save_all_setup_context)
torch.library.register_autograd("gelu_ext::bias_gelu_backward",
                                _bias_gelu_backward_backward_formula,
                                setup_context=_save_all_setup_context)
torch.library.register_autograd("gelu_ext::geglu", _geglu_backward_formula,
                                setup_context=_save_all_setup_context)
torch.library.register_autograd("gelu_ext::geglu_backward", _geglu_backward_backward_formula,
                                setup_context=_save_all_setup_context)
torch.library.register_autograd("gelu_ext::geglu_packed", _geglu_packed_backward_formula,
                                setup_context=_save_all_setup_context)
torch.library.register_autograd("gelu_ext::geglu_packed_backward",
                                _geglu_packed_backward_backward_formula,
                                setup_context=_save_all_setup_context)


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
