"""The autograd.Functions through which the public functions (functional.py) reach the ops in
eager mode and under torch.func, and what decides whether a call needs one.

torch.library gives custom ops reverse-mode autograd (ops.py) but no forward-mode AD, so forward
mode goes through these, which call the same ops: classic autograd.Functions for eager autograd
and forward AD (a third of the setup_context style's Python overhead), and setup_context-style
ones for torch.func transforms. They save their inputs for a jvp only under forward AD, and call
the ops below autograd: their own node is the graph. A backward that builds a graph
(create_graph) or carries tangents goes through autograd.Functions for the backward ops too, for
the next order.
"""

import torch
import torch.autograd.forward_ad as forward_ad
from torch._C._functorch import is_functorch_wrapped_tensor

from .ops import (bias_gelu_second_order, exact_bias_sum, geglu_packed_second_order,
                  geglu_second_order, sum_to_bias)

_ops = torch.ops.gelu_ext


def _forward_ad_active():
    return forward_ad._current_level >= 0


def _records_graph(*tensors):
    """Whether autograd records a call on these tensors: grad mode on (not so in a backward pass
    without create_graph, whose inputs may require grad) and one of them requiring grad."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def differentiable(*tensors):
    return _forward_ad_active() or _records_graph(*tensors)


def below_autograd(op, *args):
    """op(*args) without its registered autograd kernel (what that kernel itself does where no
    graph is needed)."""
    with torch._C._AutoDispatchBelowAutograd():
        return op(*args)


def _added(a, b):
    """a + b, where None stands for zero."""
    return b if a is None else a if b is None else a + b


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
        result = _added(result, term)
    return result


def _save(ctx, *tensors):
    """Saves tensors for the backward, and for a jvp where forward AD is active (saving for it
    costs as much as the rest of the call)."""
    ctx.save_for_backward(*tensors)
    if _forward_ad_active():
        ctx.save_for_forward(*tensors)


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, approximate):
        ctx.approximate = approximate
        _save(ctx, input)
        return below_autograd(_ops.gelu.default, input, approximate)

    backward = staticmethod(_gelu_backward)
    jvp = staticmethod(_gelu_jvp)


class _GELUBackward(torch.autograd.Function):
    """grad_output * gelu'(input), itself differentiable in both modes."""

    @staticmethod
    def forward(ctx, grad_output, input, approximate):
        ctx.approximate = approximate
        _save(ctx, grad_output, input)
        return below_autograd(_ops.gelu_backward.default, grad_output, input, approximate)

    backward = staticmethod(_gelu_backward_backward)
    jvp = staticmethod(_gelu_backward_jvp)


def _setup_context(ctx, inputs, output):
    *tensors, ctx.approximate = inputs
    ctx.save_for_backward(*tensors)
    ctx.save_for_forward(*tensors)


class GELUFunctorchFunction(torch.autograd.Function):
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


def _apply_backward(grad_output, input, approximate):
    if torch.compiler.is_compiling():
        return _ops.gelu_backward.default(grad_output, input, approximate)
    if is_functorch_wrapped_tensor(grad_output) or is_functorch_wrapped_tensor(input):
        return _GELUBackwardFunctorch.apply(grad_output, input, approximate)
    if differentiable(grad_output, input):
        return _GELUBackward.apply(grad_output, input, approximate)
    return below_autograd(_ops.gelu_backward.default, grad_output, input, approximate)


# The fused ops. In eager mode, classic autograd.Functions as gelu's, and for their backward ops
# too where the gradient needs a graph or a tangent: reverse mode to second order (the formulas
# in ops.py) and forward mode to second order (forward over reverse), with jvps composed from the
# ops. Under torch.func transforms, autograd.Functions in the setup_context style with the same
# formulas.

def _sum_tangent(input, input_tangent, bias_tangent):
    """The tangent of input + bias (bias broadcast), or None for zero."""
    return _added(input_tangent, None if bias_tangent is None else bias_tangent.expand_as(input))


def _bias_gelu_jvp(ctx, input_tangent, bias_tangent, _):
    # d gelu(x + b) = gelu'(x + b) (dx + db): the backward op's grad_input with dx + db as grad.
    input, bias = ctx.saved_tensors
    tangent = _sum_tangent(input, input_tangent, bias_tangent)
    if tangent is None:
        return None
    return _ops.bias_gelu_backward.default(tangent, input, bias, ctx.approximate)[0]


def _geglu_tangent(gate, up, gate_tangent, up_tangent, approximate):
    # d (gelu(g) u) = u gelu'(g) dg + gelu(g) du: the backward op's grad_gate with dg as grad,
    # and geglu of du.
    tangent = None
    if gate_tangent is not None:
        tangent = _ops.geglu_backward.default(gate_tangent, gate, up, approximate)[0]
    if up_tangent is not None:
        tangent = _added(tangent, _ops.geglu.default(gate, up_tangent, approximate))
    return tangent


def _geglu_jvp(ctx, gate_tangent, up_tangent, _):
    gate, up = ctx.saved_tensors
    return _geglu_tangent(gate, up, gate_tangent, up_tangent, ctx.approximate)


def _geglu_packed_jvp(ctx, h_tangent, _):
    (h,) = ctx.saved_tensors
    if h_tangent is None:
        return None
    return _geglu_tangent(*h.chunk(2, dim=-1), *h_tangent.chunk(2, dim=-1), ctx.approximate)


def _bias_gelu_backward_jvp(ctx, grad_tangent, input_tangent, bias_tangent, _):
    # grad_input = g f'(z), z = x + b: d grad_input = dg f'(z) + g f''(z) (dx + db), and
    # d grad_bias its sum over rows; in float64 at the exact sum z, rounded once.
    grad_output, input, bias = ctx.saved_tensors
    z = exact_bias_sum(input, bias)
    tangent = None
    if grad_tangent is not None:
        tangent = _ops.gelu_backward.default(grad_tangent.double(), z, ctx.approximate)
    sum_tangent = _sum_tangent(input, input_tangent, bias_tangent)
    if sum_tangent is not None:
        _, curvature = _ops.gelu_double_backward.default(
            sum_tangent.double(), grad_output.double(), z, ctx.approximate)
        tangent = _added(tangent, curvature)
    if tangent is None:
        return None, None
    return tangent.to(input.dtype), sum_to_bias(tangent).to(bias.dtype)


def _geglu_backward_tangents(grad_output, gate, up, grad_tangent, gate_tangent, up_tangent,
                             approximate):
    # grad_gate = g u f'(x) and grad_up = g f(x):
    # d grad_gate = f'(x) (dg u + g du) + g u f''(x) dx, d grad_up = f(x) dg + g f'(x) dx.
    grad_gate_tangent = grad_up_tangent = None
    slope_factor = _added(None if grad_tangent is None else grad_tangent * up,
                          None if up_tangent is None else grad_output * up_tangent)
    if slope_factor is not None:
        grad_gate_tangent = _ops.gelu_backward.default(slope_factor, gate, approximate)
    if gate_tangent is not None:
        _, curvature = _ops.gelu_double_backward.default(gate_tangent, grad_output * up, gate,
                                                         approximate)
        grad_gate_tangent = _added(grad_gate_tangent, curvature)
        grad_up_tangent = _ops.gelu_backward.default(grad_output * gate_tangent, gate,
                                                     approximate)
    if grad_tangent is not None:
        grad_up_tangent = _added(grad_up_tangent,
                                 _ops.geglu.default(gate, grad_tangent, approximate))
    return grad_gate_tangent, grad_up_tangent


def _geglu_backward_jvp(ctx, grad_tangent, gate_tangent, up_tangent, _):
    return _geglu_backward_tangents(*ctx.saved_tensors, grad_tangent, gate_tangent, up_tangent,
                                    ctx.approximate)


def _geglu_packed_backward_jvp(ctx, grad_tangent, h_tangent, _):
    grad_output, h = ctx.saved_tensors
    gate_tangent, up_tangent = (None, None) if h_tangent is None else h_tangent.chunk(2, dim=-1)
    halves = _geglu_backward_tangents(grad_output, *h.chunk(2, dim=-1), grad_tangent,
                                      gate_tangent, up_tangent, ctx.approximate)
    if all(t is None for t in halves):
        return None
    zeros = torch.zeros_like(grad_output)
    return torch.cat([zeros if t is None else t for t in halves], dim=-1)


def _classic_forward(op):
    """forward(ctx, *tensors, approximate) of a classic autograd.Function calling op."""
    def forward(ctx, *args):
        *tensors, ctx.approximate = args
        _save(ctx, *tensors)
        return below_autograd(op, *args)
    return forward


def _second_order_backward(second_order):
    """The backward of a backward op's autograd.Function: `second_order` (ops.py)."""
    return lambda ctx, *grads: (*second_order(*grads, *ctx.saved_tensors, ctx.approximate), None)


def _backward_function(name, op, second_order, jvp):
    """A classic autograd.Function for the backward op `op` of a fused op: its backward is
    `second_order` (ops.py), its jvp `jvp`."""
    return type(f"_{name}", (torch.autograd.Function,), dict(
        forward=staticmethod(_classic_forward(op)),
        backward=staticmethod(_second_order_backward(second_order)), jvp=staticmethod(jvp)))


_BiasGELUBackward = _backward_function("bias_gelu_backward", _ops.bias_gelu_backward.default,
                                       bias_gelu_second_order, _bias_gelu_backward_jvp)
_GEGLUBackward = _backward_function("geglu_backward", _ops.geglu_backward.default,
                                    geglu_second_order, _geglu_backward_jvp)
_GEGLUPackedBackward = _backward_function("geglu_packed_backward",
                                          _ops.geglu_packed_backward.default,
                                          geglu_packed_second_order, _geglu_packed_backward_jvp)


def _eager_function(name, op, backward_op, backward_function, jvp):
    """A classic autograd.Function for the fused op `op`, whose gradients come from
    `backward_op` (grad_output first, then op's tensor inputs), or from `backward_function`
    where they need a graph or a tangent."""
    def backward(ctx, grad):
        tensors = (grad, *ctx.saved_tensors)
        if differentiable(*tensors):
            grads = backward_function.apply(*tensors, ctx.approximate)
        else:
            grads = below_autograd(backward_op, *tensors, ctx.approximate)
        return (*(grads if isinstance(grads, tuple) else (grads,)), None)

    return type(f"_{name}", (torch.autograd.Function,), dict(
        forward=staticmethod(_classic_forward(op)), backward=staticmethod(backward),
        jvp=staticmethod(jvp)))


BiasGELUFunction = _eager_function("bias_gelu", _ops.bias_gelu.default,
                                   _ops.bias_gelu_backward.default, _BiasGELUBackward,
                                   _bias_gelu_jvp)
GEGLUFunction = _eager_function("geglu", _ops.geglu.default, _ops.geglu_backward.default,
                                _GEGLUBackward, _geglu_jvp)
GEGLUPackedFunction = _eager_function("geglu_packed", _ops.geglu_packed.default,
                                      _ops.geglu_packed_backward.default, _GEGLUPackedBackward,
                                      _geglu_packed_jvp)


def _functorch_function(name, forward, backward, jvp):
    return type(name, (torch.autograd.Function,), dict(
        generate_vmap_rule=True, forward=staticmethod(forward),
        setup_context=staticmethod(_setup_context), backward=staticmethod(backward),
        jvp=staticmethod(jvp)))


_BiasGELUBackwardFunctorch = _functorch_function(
    "_BiasGELUBackwardFunctorch",
    lambda grad, input, bias, approximate: _ops.bias_gelu_backward.default(
        grad, input, bias, approximate),
    _second_order_backward(bias_gelu_second_order), _bias_gelu_backward_jvp)
_GEGLUBackwardFunctorch = _functorch_function(
    "_GEGLUBackwardFunctorch",
    lambda grad, gate, up, approximate: _ops.geglu_backward.default(grad, gate, up, approximate),
    _second_order_backward(geglu_second_order), _geglu_backward_jvp)


def _backward_through(function):
    """A fused op's backward: its backward op's autograd.Function on (grad, *saved)."""
    return lambda ctx, grad: (*function.apply(grad, *ctx.saved_tensors, ctx.approximate), None)


BiasGELUFunctorchFunction = _functorch_function(
    "BiasGELUFunctorchFunction",
    lambda input, bias, approximate: _ops.bias_gelu.default(input, bias, approximate),
    _backward_through(_BiasGELUBackwardFunctorch), _bias_gelu_jvp)
GEGLUFunctorchFunction = _functorch_function(
    "GEGLUFunctorchFunction",
    lambda gate, up, approximate: _ops.geglu.default(gate, up, approximate),
    _backward_through(_GEGLUBackwardFunctorch), _geglu_jvp)
