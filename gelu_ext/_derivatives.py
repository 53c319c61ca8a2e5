"""The derivatives of every op, written once, for both reverse mode (vjp) and forward mode (jvp).

Each formula takes first the ops it computes with, as an object with one attribute per op
(`ops.gelu_backward(grad, input, approximate)`): the ops' registered autograd (ops.py) passes the
ops themselves, which differentiate further through that same autograd; the autograd.Functions
(_autograd.py) pass the routed calls, which also carry tangents. Then the approximation, the op's
tensor inputs (saved in its forward), and the gradients of its outputs (vjp: returns one gradient
per tensor input) or the tangents of its tensor inputs, None for zero (jvp: returns the tangent of
each output, None for zero).

With f the GELU variant: the fused ops' second derivatives are composed from gelu_backward and
gelu_double_backward, so they differentiate no further than gelu's (second order); the
derivatives of gelu_double_backward, third order, are refused.
"""

import torch


def added(a, b):
    """a + b, where None stands for zero."""
    return b if a is None else a if b is None else a + b


def exact_bias_sum(input, bias):
    """input + bias in float64, so that 16-bit and float32 sums are not rounded (as in the
    kernels)."""
    return input.double() + bias.double()


def sum_to_bias(t):
    """t summed over all but its last dimension."""
    return t.sum(dim=tuple(range(t.dim() - 1)))


def refuse_third_order(*_):
    raise NotImplementedError("gelu_ext: derivatives of third order and above are not implemented")


# gelu(x) = f(x); gelu_backward(g, x) = g f'(x); gelu_double_backward(gg, g, x) = (gg f'(x),
# gg g f''(x)): the gradients of gelu_backward's output for g and for x.

def gelu_vjp(ops, approximate, inputs, grad):
    (input,) = inputs
    return (ops.gelu_backward(grad, input, approximate),)


def gelu_jvp(ops, approximate, inputs, input_tangent):
    (input,) = inputs
    return ops.gelu_backward(input_tangent, input, approximate)


def gelu_backward_vjp(ops, approximate, inputs, grad_grad_input):
    grad_output, input = inputs
    return ops.gelu_double_backward(grad_grad_input, grad_output, input, approximate)


def gelu_backward_jvp(ops, approximate, inputs, grad_output_tangent, input_tangent):
    # d(g f'(x)) = dg f'(x) + g f''(x) dx
    grad_output, input = inputs
    tangent = None
    if grad_output_tangent is not None:
        tangent = ops.gelu_backward(grad_output_tangent, input, approximate)
    if input_tangent is not None:
        _, curvature = ops.gelu_double_backward(input_tangent, grad_output, input, approximate)
        tangent = added(tangent, curvature)
    return tangent


# bias_gelu(x, b) = f(z), z = x + b (b broadcast over rows); bias_gelu_backward(g, x, b) =
# (g f'(z), its sum over rows).

def _sum_tangent(input, input_tangent, bias_tangent):
    """The tangent of input + bias (bias broadcast), or None for zero."""
    return added(input_tangent, None if bias_tangent is None else bias_tangent.expand_as(input))


def bias_gelu_vjp(ops, approximate, inputs, grad):
    return ops.bias_gelu_backward(grad, *inputs, approximate)


def bias_gelu_jvp(ops, approximate, inputs, input_tangent, bias_tangent):
    # d f(x + b) = f'(x + b) (dx + db): the backward op's grad_input with dx + db as grad.
    input, bias = inputs
    tangent = _sum_tangent(input, input_tangent, bias_tangent)
    if tangent is None:
        return None
    return ops.bias_gelu_backward(tangent, input, bias, approximate)[0]


def bias_gelu_backward_vjp(ops, approximate, inputs, grad_grad_input, grad_grad_bias):
    # The upstream gradient reaching grad_input = g f'(z) is u = grad_grad_input + grad_grad_bias
    # (broadcast); in float64 at the exact sum z, rounded once.
    grad_output, input, bias = inputs
    u = grad_grad_input + grad_grad_bias
    d_grad, d_z = ops.gelu_double_backward(u.double(), grad_output.double(),
                                           exact_bias_sum(input, bias), approximate)
    return d_grad.to(grad_output.dtype), d_z.to(input.dtype), sum_to_bias(d_z).to(bias.dtype)


def bias_gelu_backward_jvp(ops, approximate, inputs, grad_tangent, input_tangent, bias_tangent):
    # d grad_input = dg f'(z) + g f''(z) (dx + db), and d grad_bias its sum over rows; in float64
    # at the exact sum z, rounded once.
    grad_output, input, bias = inputs
    z = exact_bias_sum(input, bias)
    tangent = None
    if grad_tangent is not None:
        tangent = ops.gelu_backward(grad_tangent.double(), z, approximate)
    sum_tangent = _sum_tangent(input, input_tangent, bias_tangent)
    if sum_tangent is not None:
        _, curvature = ops.gelu_double_backward(sum_tangent.double(), grad_output.double(), z,
                                                approximate)
        tangent = added(tangent, curvature)
    if tangent is None:
        return None, None
    return tangent.to(input.dtype), sum_to_bias(tangent).to(bias.dtype)


# geglu(x, u) = f(x) u (x the gate); geglu_backward(g, x, u) = (g u f'(x), g f(x)). geglu_packed
# takes h = [x, u] and gives the same; its backward returns [grad_gate, grad_up] as one tensor.

def geglu_vjp(ops, approximate, inputs, grad):
    return ops.geglu_backward(grad, *inputs, approximate)


def _geglu_tangent(ops, approximate, gate, up, gate_tangent, up_tangent):
    # d (f(x) u) = u f'(x) dx + f(x) du: the backward op's grad_gate with dx as grad, and geglu
    # of du.
    tangent = None
    if gate_tangent is not None:
        tangent = ops.geglu_backward(gate_tangent, gate, up, approximate)[0]
    if up_tangent is not None:
        tangent = added(tangent, ops.geglu(gate, up_tangent, approximate))
    return tangent


def geglu_jvp(ops, approximate, inputs, gate_tangent, up_tangent):
    return _geglu_tangent(ops, approximate, *inputs, gate_tangent, up_tangent)


def geglu_backward_vjp(ops, approximate, inputs, a, c):
    """The gradients for grad_output, gate and up, given a and c, those of grad_gate and
    grad_up."""
    grad_output, gate, up = inputs
    d_grad = ops.gelu_backward(a * up, gate, approximate) + c * ops.gelu(gate, approximate)
    _, d_gate_curvature = ops.gelu_double_backward(a * up, grad_output, gate, approximate)
    d_gate = d_gate_curvature + ops.gelu_backward(c * grad_output, gate, approximate)
    d_up = ops.gelu_backward(a * grad_output, gate, approximate)
    return d_grad, d_gate, d_up


def geglu_backward_jvp(ops, approximate, inputs, grad_tangent, gate_tangent, up_tangent):
    # d grad_gate = f'(x) (dg u + g du) + g u f''(x) dx, d grad_up = f(x) dg + g f'(x) dx.
    grad_output, gate, up = inputs
    grad_gate_tangent = grad_up_tangent = None
    slope_factor = added(None if grad_tangent is None else grad_tangent * up,
                         None if up_tangent is None else grad_output * up_tangent)
    if slope_factor is not None:
        grad_gate_tangent = ops.gelu_backward(slope_factor, gate, approximate)
    if gate_tangent is not None:
        _, curvature = ops.gelu_double_backward(gate_tangent, grad_output * up, gate, approximate)
        grad_gate_tangent = added(grad_gate_tangent, curvature)
        grad_up_tangent = ops.gelu_backward(grad_output * gate_tangent, gate, approximate)
    if grad_tangent is not None:
        grad_up_tangent = added(grad_up_tangent, ops.geglu(gate, grad_tangent, approximate))
    return grad_gate_tangent, grad_up_tangent


def _halves(t):
    """t's halves [gate, up] in the last dimension, or (None, None) for a zero tangent."""
    return (None, None) if t is None else t.chunk(2, dim=-1)


def geglu_packed_vjp(ops, approximate, inputs, grad):
    (h,) = inputs
    return (ops.geglu_packed_backward(grad, h, approximate),)


def geglu_packed_jvp(ops, approximate, inputs, h_tangent):
    (h,) = inputs
    return _geglu_tangent(ops, approximate, *_halves(h), *_halves(h_tangent))


def geglu_packed_backward_vjp(ops, approximate, inputs, grad_grad_h):
    grad_output, h = inputs
    d_grad, d_gate, d_up = geglu_backward_vjp(ops, approximate, (grad_output, *_halves(h)),
                                              *_halves(grad_grad_h))
    return d_grad, torch.cat([d_gate, d_up], dim=-1)


def geglu_packed_backward_jvp(ops, approximate, inputs, grad_tangent, h_tangent):
    grad_output, h = inputs
    halves = geglu_backward_jvp(ops, approximate, (grad_output, *_halves(h)), grad_tangent,
                                *_halves(h_tangent))
    if all(t is None for t in halves):
        return None
    zeros = torch.zeros_like(grad_output)
    return torch.cat([zeros if t is None else t for t in halves], dim=-1)


# op name -> (vjp, jvp)
DERIVATIVES = {
    "gelu": (gelu_vjp, gelu_jvp),
    "gelu_backward": (gelu_backward_vjp, gelu_backward_jvp),
    "gelu_double_backward": (refuse_third_order, refuse_third_order),
    "bias_gelu": (bias_gelu_vjp, bias_gelu_jvp),
    "bias_gelu_backward": (bias_gelu_backward_vjp, bias_gelu_backward_jvp),
    "geglu": (geglu_vjp, geglu_jvp),
    "geglu_backward": (geglu_backward_vjp, geglu_backward_jvp),
    "geglu_packed": (geglu_packed_vjp, geglu_packed_jvp),
    "geglu_packed_backward": (geglu_packed_backward_vjp, geglu_packed_backward_jvp),
}
