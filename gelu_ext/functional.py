"""The public functional API.

The ops carry reverse-mode autograd and vmap rules (ops.py), but torch.library gives custom ops
no forward-mode AD: torch.func.jvp through them silently returns zero tangents. Forward mode
(jvp, forward-over-reverse) therefore goes through autograd.Functions with a jvp, which call the
same ops. Which path a call takes:

  under torch.compile        the op itself: Dynamo cannot trace an autograd.Function with a jvp,
                             and AOTAutograd differentiates the op through its registered autograd;
  torch.func transforms      autograd.Functions in the setup_context style that torch.func needs;
  autograd or forward AD     classic autograd.Functions (a third of the setup_context style's
                             Python overhead);
  otherwise (inference)      the op itself.
"""

import torch
import torch.autograd.forward_ad as forward_ad
from torch._C._functorch import is_functorch_wrapped_tensor

from .ops import check_approximate

_ops = torch.ops.gelu_ext


# Formulas shared by both styles of autograd.Function. ctx.saved_tensors holds (input,) for
# gelu and (grad_output, input) for gelu_backward.

def _gelu_backward(ctx, grad_output):
    (input,) = ctx.saved_tensors
    return _apply_backward(grad_output, input, ctx.approximate), None


def _gelu_jvp(ctx, input_tangent, _):
    (input,) = ctx.saved_tensors
    return _apply_backward(input_tangent, input, ctx.approximate)


def _gelu_backward_backward(ctx, grad_grad_input):
    grad_output, input = ctx.saved_tensors
    grad_grad_output, grad_input = _ops.gelu_double_backward.default(
        grad_grad_input, grad_output, input, ctx.approximate)
    return grad_grad_output, grad_input, None


def _gelu_backward_jvp(ctx, grad_output_tangent, input_tangent, _):
    # d(g f'(x)) = dg f'(x) + g f''(x) dx
    grad_output, input = ctx.saved_tensors
    result = None
    if grad_output_tangent is not None:
        result = _ops.gelu_backward.default(grad_output_tangent, input, ctx.approximate)
    if input_tangent is not None:
        _, term = _ops.gelu_double_backward.default(
            input_tangent, grad_output, input, ctx.approximate)
        result = term if result is None else result + term
    return result


class _GELU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, approximate):
        ctx.approximate = approximate
        ctx.save_for_backward(input)
        ctx.save_for_forward(input)
        return _ops.gelu.default(input, approximate)

    backward = staticmethod(_gelu_backward)
    jvp = staticmethod(_gelu_jvp)


class _GELUBackward(torch.autograd.Function):
    """grad_output * gelu'(input), itself differentiable in both modes."""

    @staticmethod
    def forward(ctx, grad_output, input, approximate):
        ctx.approximate = approximate
        ctx.save_for_backward(grad_output, input)
        ctx.save_for_forward(grad_output, input)
        return _ops.gelu_backward.default(grad_output, input, approximate)

    backward = staticmethod(_gelu_backward_backward)
    jvp = staticmethod(_gelu_backward_jvp)


def _setup_context(ctx, inputs, output):
    *tensors, ctx.approximate = inputs
    ctx.save_for_backward(*tensors)
    ctx.save_for_forward(*tensors)


class _GELUFunctorch(torch.autograd.Function):
    generate_vmap_rule = True
    forward = staticmethod(lambda input, approximate: _ops.gelu.default(input, approximate))
    setup_context = staticmethod(_setup_context)
    backward = staticmethod(_gelu_backward)
    jvp = staticmethod(_gelu_jvp)


class _GELUBackwardFunctorch(torch.autograd.Function):
    generate_vmap_rule = True
    forward = staticmethod(lambda grad_output, input, approximate:
                           _ops.gelu_backward.default(grad_output, input, approximate))
    setup_context = staticmethod(_setup_context)
    backward = staticmethod(_gelu_backward_backward)
    jvp = staticmethod(_gelu_backward_jvp)


def _differentiable(*tensors):
    return any(t.requires_grad for t in tensors) or forward_ad._current_level >= 0


def _apply_backward(grad_output, input, approximate):
    if torch.compiler.is_compiling():
        return _ops.gelu_backward.default(grad_output, input, approximate)
    if is_functorch_wrapped_tensor(grad_output) or is_functorch_wrapped_tensor(input):
        return _GELUBackwardFunctorch.apply(grad_output, input, approximate)
    if _differentiable(grad_output, input):
        return _GELUBackward.apply(grad_output, input, approximate)
    return _ops.gelu_backward.default(grad_output, input, approximate)


def gelu(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    r"""GELU of `input`, elementwise, like :func:`torch.nn.functional.gelu` but accurate.

    approximate:
      "none"    - exact: x * Phi(x), Phi the standard normal CDF
      "tanh"    - 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
      "sigmoid" - x * sigmoid(1.702 * x) ("quick GELU")

    Works on CPU and CUDA tensors of float16, bfloat16, float32 and float64, of any shape and
    layout; differentiable to second order in reverse and forward mode, vmap-able, and traceable by
    torch.compile without graph breaks.
    """
    check_approximate(approximate)
    if torch.compiler.is_compiling():
        return _ops.gelu.default(input, approximate)
    if is_functorch_wrapped_tensor(input):
        return _GELUFunctorch.apply(input, approximate)
    if _differentiable(input):
        return _GELU.apply(input, approximate)
    return _ops.gelu.default(input, approximate)


# The fused ops under torch.func transforms, which need autograd.Functions in the setup_context
# style: first order there (vmap(grad(...)) for per-sample gradients); the ops' own autograd gives
# second order outside torch.func.

def _second_order_under_torch_func(ctx, *grads):
    raise NotImplementedError("gelu_ext: second derivatives of bias_gelu and geglu under "
                              "torch.func transforms are not implemented; torch.autograd.grad "
                              "with create_graph=True supports them")


def _functorch_function(name, forward, backward):
    return type(name, (torch.autograd.Function,), dict(
        generate_vmap_rule=True, forward=staticmethod(forward),
        setup_context=staticmethod(_setup_context), backward=staticmethod(backward)))


_BiasGELUBackwardFunctorch = _functorch_function(
    "_BiasGELUBackwardFunctorch",
    lambda grad, input, bias, approximate: _ops.bias_gelu_backward.default(
        grad, input, bias, approximate),
    _second_order_under_torch_func)
_GEGLUBackwardFunctorch = _functorch_function(
    "_GEGLUBackwardFunctorch",
    lambda grad, gate, up, approximate: _ops.geglu_backward.default(grad, gate, up, approximate),
    _second_order_under_torch_func)


def _bias_gelu_functorch_backward(ctx, grad):
    input, bias = ctx.saved_tensors
    return (*_BiasGELUBackwardFunctorch.apply(grad, input, bias, ctx.approximate), None)


def _geglu_functorch_backward(ctx, grad):
    gate, up = ctx.saved_tensors
    return (*_GEGLUBackwardFunctorch.apply(grad, gate, up, ctx.approximate), None)


_BiasGELUFunctorch = _functorch_function(
    "_BiasGELUFunctorch",
    lambda input, bias, approximate: _ops.bias_gelu.default(input, bias, approximate),
    _bias_gelu_functorch_backward)
_GEGLUFunctorch = _functorch_function(
    "_GEGLUFunctorch", lambda gate, up, approximate: _ops.geglu.default(gate, up, approximate),
    _geglu_functorch_backward)


def _functorch_wrapped(*tensors):
    return not torch.compiler.is_compiling() and any(is_functorch_wrapped_tensor(t)
                                                     for t in tensors)


def bias_gelu(input: torch.Tensor, bias: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """gelu(input + bias), fused: bias is 1-D and broadcast over input's last dimension.

    The sum is formed exactly inside the kernel for 16-bit and float32 operands (in double, or as
    a float pair for float32 on the CPU), so it is not rounded before the GELU; for float64 it is
    rounded once, to double. The backward returns grad_input and grad_bias (grad_input
    summed over all leading dimensions) from one elementwise pass and one reduction.
    """
    check_approximate(approximate)
    if _functorch_wrapped(input, bias):
        return _BiasGELUFunctorch.apply(input, bias, approximate)
    return _ops.bias_gelu.default(input, bias, approximate)


def geglu(gate: torch.Tensor, up: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """gelu(gate) * up, fused, for gate and up of one shape, dtype and device.

    `gate, up = h.chunk(2, dim=-1)` works without a copy. The backward computes both gradients
    in one pass.
    """
    check_approximate(approximate)
    if _functorch_wrapped(gate, up):
        return _GEGLUFunctorch.apply(gate, up, approximate)
    return _ops.geglu.default(gate, up, approximate)


def geglu_packed(h: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """geglu(*h.chunk(2, dim=-1)): gelu(gate) * up for h = [gate, up] side by side in the last
    dimension (the output of one projection to twice the width), fused.

    Its backward writes grad_h in one pass, where geglu on h's halves would leave autograd to
    concatenate grad_gate and grad_up in a further copy.
    """
    check_approximate(approximate)
    if _functorch_wrapped(h):
        if h.dim() >= 1 and h.shape[-1] % 2 == 0:
            return _GEGLUFunctorch.apply(*h.chunk(2, dim=-1), approximate)
    return _ops.geglu_packed.default(h, approximate)
