"""The public functional API.

Which path a call takes:

  nested tensors (jagged)    the same call on their packed values, rewrapped (_on_jagged_values);
  under torch.compile        the op itself: Dynamo cannot trace an autograd.Function with a jvp,
                             and AOTAutograd differentiates the op through its registered autograd;
  torch.func transforms      autograd.Functions in the setup_context style that torch.func needs
                             (_autograd.py);
  autograd or forward AD     classic autograd.Functions (_autograd.py);
  otherwise (inference, and  the op below its registered autograd, which is Python code that
  backward passes that       would only find that no graph is needed: on small tensors that
  build no graph)            check cost as much as the kernel.
"""

import torch
from torch._C._functorch import is_functorch_wrapped_tensor

from ._autograd import (BiasGELUFunction, BiasGELUFunctorchFunction, GEGLUFunction,
                        GEGLUFunctorchFunction, GEGLUPackedFunction, GELUFunction,
                        GELUFunctorchFunction, below_autograd, differentiable)
from .ops import check_approximate

_ops = torch.ops.gelu_ext


def _check_tensors(op, **operands):
    for name, t in operands.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"gelu_ext.{op}: expected '{name}' to be a torch.Tensor, but got "
                            f"{type(t).__name__}")


def _on_jagged_values(op, compute, nested, *others, last_dim_regular=False):
    """compute(values, *other values) for nested tensors of the jagged layout, as F.gelu accepts
    them: the ops run on the packed values (every sequence's rows, one after another), and the
    result takes the first operand's offsets. The fused ops read the last dimension as columns,
    so there it must not be the ragged one. Nested tensors among `others` must share the first
    one's offsets."""
    for t in (nested, *others):
        if t.is_nested and t.layout != torch.jagged:
            raise TypeError(f"gelu_ext.{op}: nested tensors must have layout=torch.jagged, but "
                            f"got {t.layout}")
    ragged = nested._ragged_idx
    if last_dim_regular and ragged == nested.dim() - 1:
        raise ValueError(f"gelu_ext.{op}: the last dimension of a nested tensor must not be its "
                         f"ragged one")
    if any(t.is_nested and t.offsets() is not nested.offsets() for t in others):
        raise ValueError(f"gelu_ext.{op}: nested operands must share their offsets (be views of "
                         f"one nested tensor, as h.chunk(2, -1) gives)")
    values = compute(nested.values(), *(t.values() if t.is_nested else t for t in others))
    return torch.nested.nested_tensor_from_jagged(values, nested.offsets(), nested.lengths(),
                                                  jagged_dim=ragged)


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
    _check_tensors("gelu", input=input)
    check_approximate(approximate)
    if input.is_nested:
        return _on_jagged_values("gelu", lambda v: gelu(v, approximate), input)
    if torch.compiler.is_compiling():
        return _ops.gelu.default(input, approximate)
    if is_functorch_wrapped_tensor(input):
        return GELUFunctorchFunction.apply(input, approximate)
    if differentiable(input):
        return GELUFunction.apply(input, approximate)
    return below_autograd(_ops.gelu.default, input, approximate)


# The device types with an autocast state ("meta", for one, has none: asking about it raises),
# found once here: Dynamo before torch 2.14 cannot trace torch.amp.is_autocast_available.
_AUTOCAST_DEVICE_TYPES = frozenset(
    t for t in ("cpu", "cuda", "xpu", "mps", "hpu", "mtia", "xla", "ipu", "maia")
    if torch.amp.is_autocast_available(t))


def _in_autocast_dtype(first, *others):
    """Under autocast on first's device, the other operands in first's dtype, as autocast casts
    nn.Linear's bias to the dtype it computes in: so that BiasGELU after nn.Linear(bias=False),
    whose output autocast makes bfloat16 or float16, works with its float32 bias, and its
    gradient flows back to it in float32. Elsewhere the operands must match (the op says so)."""
    device_type = first.device.type
    if not (device_type in _AUTOCAST_DEVICE_TYPES and torch.is_autocast_enabled(device_type)):
        return others
    return tuple(t.to(first.dtype) if t.is_floating_point() else t for t in others)


def _fused(eager, functorch, op, first, *others):
    """The path of a fused op's call (module docstring); others end with approximate."""
    args = (first, *_in_autocast_dtype(first, *others[:-1]), others[-1])
    tensors = args[:-1]
    if torch.compiler.is_compiling():
        return op(*args)
    if functorch is not None and any(is_functorch_wrapped_tensor(t) for t in tensors):
        return functorch.apply(*args)
    if differentiable(*tensors):
        return eager.apply(*args)
    return below_autograd(op, *args)


def bias_gelu(input: torch.Tensor, bias: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """gelu(input + bias), fused: bias is 1-D and broadcast over input's last dimension.

    The sum is formed exactly inside the kernel for 16-bit and float32 operands (in double, or as
    a float pair for float32 on the CPU), so it is not rounded before the GELU; for float64 it is
    rounded once, to double. The backward returns grad_input and grad_bias (grad_input
    summed over all leading dimensions) from one elementwise pass and one reduction.
    """
    _check_tensors("bias_gelu", input=input, bias=bias)
    check_approximate(approximate)
    if input.is_nested:
        return _on_jagged_values("bias_gelu", lambda v, b: bias_gelu(v, b, approximate), input,
                                 bias, last_dim_regular=True)
    return _fused(BiasGELUFunction, BiasGELUFunctorchFunction, _ops.bias_gelu.default, input,
                  bias, approximate)


def geglu(gate: torch.Tensor, up: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """gelu(gate) * up, fused, for gate and up of one shape, dtype and device.

    `gate, up = h.chunk(2, dim=-1)` works without a copy. The backward computes both gradients
    in one pass.
    """
    _check_tensors("geglu", gate=gate, up=up)
    check_approximate(approximate)
    if gate.is_nested or up.is_nested:
        if not (gate.is_nested and up.is_nested):
            raise TypeError("gelu_ext.geglu: 'gate' and 'up' must both be nested tensors or "
                            "neither")
        return _on_jagged_values("geglu", lambda g, u: geglu(g, u, approximate), gate, up,
                                 last_dim_regular=True)
    return _fused(GEGLUFunction, GEGLUFunctorchFunction, _ops.geglu.default, gate, up, approximate)


def geglu_packed(h: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """geglu(*h.chunk(2, dim=-1)): gelu(gate) * up for h = [gate, up] side by side in the last
    dimension (the output of one projection to twice the width), fused.

    Its backward writes grad_h in one pass, where geglu on h's halves would leave autograd to
    concatenate grad_gate and grad_up in a further copy.
    """
    _check_tensors("geglu_packed", h=h)
    check_approximate(approximate)
    if h.is_nested:
        return _on_jagged_values("geglu_packed", lambda v: geglu_packed(v, approximate), h,
                                 last_dim_regular=True)
    if (not torch.compiler.is_compiling() and is_functorch_wrapped_tensor(h) and h.dim() >= 1
            and h.shape[-1] % 2 == 0):
        return GEGLUFunctorchFunction.apply(*h.chunk(2, dim=-1), approximate)
    return _fused(GEGLUPackedFunction, None, _ops.geglu_packed.default, h, approximate)
