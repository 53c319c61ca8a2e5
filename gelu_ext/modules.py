"""nn.Module wrappers.

Each also compiles with torch.jit.script (deprecated by PyTorch, but still in use), so that a
scripted model keeps working after replace_gelu: TorchScript cannot compile the Python layer of
functional.py, and calls the registered op instead, which is differentiable through the autograd
registered with it (ops.py).
"""

import torch
from torch import Tensor, nn

from .functional import bias_gelu, gelu, geglu_packed
from .ops import check_approximate


class GELU(nn.Module):
    """Drop-in for :class:`torch.nn.GELU`, computed by gelu_ext; `approximate` may also be
    "sigmoid" (x * sigmoid(1.702 x)).

    Example::

        >>> import torch, gelu_ext
        >>> act = gelu_ext.GELU(approximate="sigmoid")
        >>> act
        GELU(approximate='sigmoid')
        >>> act(torch.tensor([-1.0, 1.0]))
        tensor([-0.1542,  0.8458])
    """

    __constants__ = ["approximate"]

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        check_approximate(approximate)
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():  # TorchScript compiles only this branch (module docstring)
            return torch.ops.gelu_ext.gelu(input, self.approximate)
        return gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class GEGLU(nn.Module):
    """GEGLU activation of a projection h = [gate, up] (T5 v1.1, Gemma-style FFNs):
    gelu(gate) * up, with gate the first half of h's last dimension.

    Takes h of size 2n in its last dimension and returns size n; the halves are read in place (no
    copy), and the backward writes grad_h in one fused pass (geglu_packed).

    Example::

        >>> import torch, gelu_ext
        >>> ffn = torch.nn.Sequential(torch.nn.Linear(8, 2 * 16), gelu_ext.GEGLU(),
        ...                           torch.nn.Linear(16, 8))
        >>> ffn(torch.randn(4, 8)).shape
        torch.Size([4, 8])
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        check_approximate(approximate)
        self.approximate = approximate

    def forward(self, h: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return torch.ops.gelu_ext.geglu_packed(h, self.approximate)
        if h.shape[-1] % 2:
            raise ValueError(f"GEGLU: the last dimension of h must be even, got {h.shape[-1]}")
        return geglu_packed(h, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class BiasGELU(nn.Module):
    """gelu(x + bias) with its own bias of `features` elements, fused (Megatron's bias-GELU):
    pair it with a bias-free nn.Linear(in, features, bias=False).

    Example::

        >>> import torch, gelu_ext
        >>> up = torch.nn.Sequential(torch.nn.Linear(8, 16, bias=False), gelu_ext.BiasGELU(16))
        >>> up(torch.randn(4, 8)).shape
        torch.Size([4, 16])
    """

    def __init__(self, features: int, approximate: str = "none", device=None, dtype=None) -> None:
        super().__init__()
        check_approximate(approximate)
        self.approximate = approximate
        self.bias = nn.Parameter(torch.zeros(features, device=device, dtype=dtype))

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return torch.ops.gelu_ext.bias_gelu(input, self.bias, self.approximate)
        return bias_gelu(input, self.bias, self.approximate)

    def extra_repr(self) -> str:
        return f"features={self.bias.numel()}, approximate={self.approximate!r}"
