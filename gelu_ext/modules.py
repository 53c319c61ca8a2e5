"""nn.Module wrappers."""

from torch import Tensor, nn

from .functional import gelu
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
