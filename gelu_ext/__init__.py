"""gelu_ext: accurate and fast GELU for PyTorch, on CPU and CUDA.

    gelu_ext.gelu(x, approximate="none" | "tanh" | "sigmoid")
    gelu_ext.GELU(approximate=...)          # nn.Module
    gelu_ext.bias_gelu(x, bias), gelu_ext.geglu(gate, up)   # fused
    gelu_ext.geglu_packed(h)                # geglu(*h.chunk(2, -1)), backward into one grad_h
    gelu_ext.BiasGELU(features), gelu_ext.GEGLU()
    gelu_ext.replace_gelu(model)            # swap it into existing models (nn.GELU, Hugging Face)
    torch.ops.gelu_ext.*                    # the registered ops
"""

import torch  # noqa: F401  (loads libtorch, which _C links against)

from . import _C  # noqa: F401  (loads the library, which registers torch.ops.gelu_ext)
from . import ops  # noqa: F401  (fake kernels, autograd and vmap rules for those ops)
from ._sharding import register_when_dtensor_is_imported
from ._version import __version__
from .functional import bias_gelu, gelu, geglu, geglu_packed
from .modules import GEGLU, GELU, BiasGELU
from .ops import APPROXIMATIONS
from .replace import replace_gelu

register_when_dtensor_is_imported()  # DTensor sharding strategies of the ops

__all__ = ["gelu", "bias_gelu", "geglu", "geglu_packed", "GELU", "BiasGELU", "GEGLU",
           "replace_gelu", "APPROXIMATIONS", "__version__"]
