"""nn.Module wrappers."""

import torch
from torch import Tensor, nn

from .functional import bias_gelu, gelu, geglu_packed
from .ops import check_approximate


class GELU(nn.Module):
    """Drop-in for :class:`torch.nn.GELU`, computed by gelu_ext; `approximate` may also be
    "sigmoid" (x * sigmoid(1.702 x))."""

    __constants__ = ["approximate"]

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        check_approximate(approximate)
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class GEGLU(nn.Module):
    """GEGLU activation of a projection h = [gate, up] (T5 v1.1, Gemma-style FFNs):
    gelu(gate) * up, with gate the first half of h's last dimension.

    Takes h of size 2n in its last dimension and returns size n; the halves are read in place (no
    copy), and the backward writes grad_h in one fused pass (geglu_packed).
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        check_approximate(approximate)
        self.approximate = approximate

    def forward(self, h: Tensor) -> Tensor:
        if h.shape[-1] % 2:
            raise ValueError(f"GEGLU: the last dimension of h must be even, got {h.shape[-1]}")
        return geglu_packed(h, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class BiasGELU(nn.Module):
    """gelu(x + bias) with its own bias of `features` elements, fused (Megatron's bias-GELU):
    pair it with a bias-free nn.Linear(in, features, bias=False)."""

    def __init__(self, features: int, approximate: str = "none", device=None, dtype=None) -> None:
        super().__init__()
        check_approximate(approximate)
        self.approximate = approximate
        self.bias = nn.Parameter(torch.zeros(features, device=device, dtype=dtype))

    def forward(self, input: Tensor) -> Tensor:
        return bias_gelu(input, self.bias, self.approximate)

    def extra_repr(self) -> str:
        return f"features={self.bias.numel()}, approximate={self.approximate!r}"
