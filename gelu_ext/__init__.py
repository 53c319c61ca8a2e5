"""gelu_ext: accurate and fast GELU for PyTorch, on CPU and CUDA.

    gelu_ext.gelu(x, approximate="none" | "tanh" | "sigmoid")
    gelu_ext.GELU(approximate=...)          # nn.Module
    gelu_ext.replace_gelu(model)            # swap it into existing models (nn.GELU, Hugging Face)
    torch.ops.gelu_ext.gelu / gelu_backward / gelu_double_backward
"""

import torch  # noqa: F401  (loads libtorch, which _C links against)

from . import _C  # noqa: F401  (loads the library, which registers torch.ops.gelu_ext)
from . import ops  # noqa: F401  (fake kernels, autograd and vmap rules for those ops)
from ._version import __version__
from .functional import gelu
from .modules import GELU
from .ops import APPROXIMATIONS
from .replace import replace_gelu

__all__ = ["gelu", "GELU", "replace_gelu", "APPROXIMATIONS", "__version__"]
