"""The public functional API: checks, nested tensors and autocast here; each call then goes to
its op by the route it needs (_autograd.route, which says why there is more than one).
"""

import torch

from ._autograd import route
from .ops import check_approximate


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

    Example::

        >>> import torch, gelu_ext
        >>> x = torch.tensor([-3.0, -1.0, 0.0, 1.0, 3.0], dtype=torch.float64)
        >>> gelu_ext.gelu(x)
        tensor([-0.0040, -0.1587,  0.0000,  0.8413,  2.9960], dtype=torch.float64)
        >>> gelu_ext.gelu(x, approximate="tanh")
        tensor([-0.0036, -0.1588,  0.0000,  0.8412,  2.9964], dtype=torch.float64)
        >>> gelu_ext.gelu(torch.tensor([-10.0]))      # F.gelu gives -0 here, in float32
        tensor([-7.6199e-23])
    """
    _check_tensors("gelu", input=input)
    check_approximate(approximate)
    if input.is_nested:
        return _on_jagged_values("gelu", lambda v: gelu(v, approximate), input)
    return route("gelu", input, approximate)


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


def _fused(name, first, *others, approximate):
    """The fused op `name` on its operands, the others under autocast in first's dtype."""
    return route(name, first, *_in_autocast_dtype(first, *others), approximate)


def bias_gelu(input: torch.Tensor, bias: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """gelu(input + bias), fused: bias is 1-D and broadcast over input's last dimension.

    The sum is formed exactly inside the kernel for 16-bit and float32 operands (in double, or as
    a float pair for float32 on the CPU), so it is not rounded before the GELU; for float64 it is
    rounded once, to double. The backward returns grad_input and grad_bias (grad_input
    summed over all leading dimensions) from one elementwise pass and one reduction.

    Example::

        >>> import torch, gelu_ext
        >>> x, bias = torch.zeros(2, 3), torch.tensor([-1.0, 0.0, 1.0])
        >>> gelu_ext.bias_gelu(x, bias)
        tensor([[-0.1587,  0.0000,  0.8413],
                [-0.1587,  0.0000,  0.8413]])
    """
    _check_tensors("bias_gelu", input=input, bias=bias)
    check_approximate(approximate)
    if input.is_nested:
        return _on_jagged_values("bias_gelu", lambda v, b: bias_gelu(v, b, approximate), input,
                                 bias, last_dim_regular=True)
    return _fused("bias_gelu", input, bias, approximate=approximate)


def geglu(gate: torch.Tensor, up: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """gelu(gate) * up, fused, for gate and up of one shape, dtype and device.

    `gate, up = h.chunk(2, dim=-1)` works without a copy. The backward computes both gradients
    in one pass.

    Example::

        >>> import torch, gelu_ext
        >>> gelu_ext.geglu(torch.tensor([1.0, 2.0]), torch.tensor([2.0, 0.5]))
        tensor([1.6827, 0.9772])
    """
    _check_tensors("geglu", gate=gate, up=up)
    check_approximate(approximate)
    if gate.is_nested or up.is_nested:
        if not (gate.is_nested and up.is_nested):
            raise TypeError("gelu_ext.geglu: 'gate' and 'up' must both be nested tensors or "
                            "neither")
        return _on_jagged_values("geglu", lambda g, u: geglu(g, u, approximate), gate, up,
                                 last_dim_regular=True)
    return _fused("geglu", gate, up, approximate=approximate)


def geglu_packed(h: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """geglu(*h.chunk(2, dim=-1)): gelu(gate) * up for h = [gate, up] side by side in the last
    dimension (the output of one projection to twice the width), fused.

    Its backward writes grad_h in one pass, where geglu on h's halves would leave autograd to
    concatenate grad_gate and grad_up in a further copy.

    Example::

        >>> import torch, gelu_ext
        >>> gelu_ext.geglu_packed(torch.tensor([[1.0, 2.0, 2.0, 0.5]]))   # [gate | up]
        tensor([[1.6827, 0.9772]])
    """
    _check_tensors("geglu_packed", h=h)
    check_approximate(approximate)
    if h.is_nested:
        return _on_jagged_values("geglu_packed", lambda v: geglu_packed(v, approximate), h,
                                 last_dim_regular=True)
    return route("geglu_packed", h, approximate)
