"""Swap gelu_ext into existing models: `replace_gelu(model)`.

Every submodule that computes one of gelu_ext's three functions is replaced, in place, by a
`gelu_ext.GELU` computing the same function:

  exact     x * Phi(x)                                        approximate="none"
  tanh      0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))   approximate="tanh"
  sigmoid   x * sigmoid(1.702 x)                              approximate="sigmoid"

What is replaced, and why (the Hugging Face classes read in transformers 5.24's activations.py;
tests/test_replace.py checks each mapped class against gelu_ext.reference in float64, so a
transformers version in which one computes something else fails there):

  torch.nn.GELU(approximate="none" | "tanh")      F.gelu with that approximation: the same
  GELUActivation                                  exact: F.gelu, or with use_gelu_python=True
    (ACT2FN "gelu", "gelu_python")                x * 0.5 * (1 + erf(x / sqrt 2)), the same function
  GELUTanh, alias PytorchGELUTanh                 tanh: F.gelu(approximate="tanh"), or with
    (ACT2FN "gelu_pytorch_tanh", "gelu_python_tanh")  use_gelu_tanh_python=True the formula itself
  NewGELUActivation (ACT2FN "gelu_new")           tanh: the formula itself
  AccurateGELUActivation (ACT2FN "gelu_accurate") tanh: the formula with sqrt(2/pi) precomputed.
                                                  Despite its name it is not a different function.
  FastGELUActivation (ACT2FN "gelu_fast")         tanh: 0.5 x (1 + tanh(0.7978845608 x (1 + 0.044715
                                                  x^2))); x (1 + 0.044715 x^2) = x + 0.044715 x^3,
                                                  and 0.7978845608 is sqrt(2/pi) = 0.79788456080287
                                                  cut to 10 decimals (relative difference 3.6e-12,
                                                  far below a float32 or bfloat16 rounding step)
  QuickGELUActivation (ACT2FN "quick_gelu")       sigmoid: x * sigmoid(1.702 x)

Left alone: ClippedGELUActivation (ACT2FN "gelu_10": GELU clipped to [min, max], a different
function), SiLUActivation / nn.SiLU (x * sigmoid(x): slope 1, not 1.702), LaplaceActivation (an
erf-based gate, not x * Phi(x)), and every other activation. Classes missing from the installed
transformers version are skipped.

Matching is conservative, because a module computes what its forward says, not what its class
is called:
- by exact class: a subclass may override forward, so subclasses are left alone;
- GELUActivation and GELUTanh only when their `act` attribute is still one of the two callables
  their constructor sets;
- modules whose `forward` was replaced on the instance (monkey-patched, say) are left alone;
- modules that already are gelu_ext.GELU (or a subclass) are left alone and not counted.

A module instance shared by several parents (or registered twice in one) is replaced by one
gelu_ext.GELU everywhere it is registered, and counted once. Forward and backward hooks registered
on a replaced module move to its replacement (the hook dictionaries themselves are handed over,
so the RemovableHandles returned at registration still remove them). Only references held as
registered submodules are rewritten: a module also kept in a plain list, dict or closure keeps
that reference to the old object.
"""

import functools

import torch
from torch import nn

from .modules import GELU

__all__ = ["replace_gelu"]

# The per-instance hook state of nn.Module that a replacement takes over.
_HOOK_ATTRIBUTES = (
    "_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
    "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
    "_backward_hooks", "_backward_pre_hooks", "_is_full_backward_hook",
)


def _classify_torch(module):
    if type(module) is nn.GELU and module.approximate in ("none", "tanh"):
        return module.approximate
    return None


def _is_bound(method, cls, name):
    """method is cls.<name> bound to an instance (the attribute the constructor set)."""
    return getattr(method, "__func__", None) is getattr(cls, name, object())


def _hf_classifiers():
    """{exact class: module -> approximate or None} for the transformers classes, or {} when
    transformers is not installed."""
    try:
        from transformers import activations as hf
    except ImportError:
        return {}

    def fixed(approximate):
        return lambda module: approximate

    def gelu_activation(module):
        act = getattr(module, "act", None)
        if act is torch.nn.functional.gelu or _is_bound(act, type(module), "_gelu_python"):
            return "none"
        return None

    def gelu_tanh(module):
        act = getattr(module, "act", None)
        if (isinstance(act, functools.partial) and act.func is torch.nn.functional.gelu
                and not act.args and act.keywords == {"approximate": "tanh"}):
            return "tanh"
        if _is_bound(act, type(module), "_gelu_tanh_python"):
            return "tanh"
        return None

    by_name = {
        "GELUActivation": gelu_activation,
        "GELUTanh": gelu_tanh,
        "NewGELUActivation": fixed("tanh"),
        "AccurateGELUActivation": fixed("tanh"),
        "FastGELUActivation": fixed("tanh"),
        "QuickGELUActivation": fixed("sigmoid"),
    }
    classifiers = {getattr(hf, name): rule for name, rule in by_name.items() if hasattr(hf, name)}
    # Older versions, without GELUTanh, had PytorchGELUTanh as a class of its own whose forward is
    # F.gelu(x, approximate="tanh"); now it is an alias of GELUTanh, already covered above.
    legacy = getattr(hf, "PytorchGELUTanh", None)
    if legacy is not None and legacy not in classifiers:
        classifiers[legacy] = fixed("tanh")
    return classifiers


def _approximation_of(module, hf_classifiers):
    """The approximate= of the gelu_ext.GELU computing the same function, or None."""
    if isinstance(module, GELU) or "forward" in vars(module):
        return None
    approximate = _classify_torch(module)
    if approximate is None:
        rule = hf_classifiers.get(type(module))
        approximate = rule(module) if rule is not None else None
    return approximate


def _replacement(module, approximate):
    new = GELU(approximate)
    new.train(module.training)
    for name in _HOOK_ATTRIBUTES:
        if name in vars(module):
            # The same objects, not copies: handles hold weak references to these dictionaries.
            object.__setattr__(new, name, vars(module)[name])
    return new


def replace_gelu(model: nn.Module) -> int:
    """Replace, in place, every submodule of `model` that computes exact GELU, its tanh
    approximation or x * sigmoid(1.702 x) by a `gelu_ext.GELU` computing the same function.

    Covers torch.nn.GELU and the Hugging Face transformers GELU classes (see this module's
    docstring for the list and for what is left alone); works without transformers installed.
    Returns the number of distinct module instances replaced. `model` itself is never replaced
    (nothing outside it refers to it here): a ValueError says so if it is such an activation.

    Example::

        >>> import torch, gelu_ext
        >>> model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(approximate="tanh"))
        >>> gelu_ext.replace_gelu(model)
        1
        >>> model[1]
        GELU(approximate='tanh')
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"replace_gelu expects a torch.nn.Module, got {type(model).__name__}")
    hf_classifiers = _hf_classifiers()
    if _approximation_of(model, hf_classifiers) is not None:
        raise ValueError(
            f"replace_gelu replaces submodules in place, and the model itself is a "
            f"{type(model).__name__}; use gelu_ext.GELU(approximate=...) in its place")

    # id(old) -> (old, its gelu_ext.GELU): shared instances get one replacement. Holding `old`
    # keeps it alive, so that its id cannot be reused by a module created during the walk.
    replacements = {}
    # Collect the parents first: modules() dedups shared modules, and must not walk a tree that
    # is being rewritten.
    for parent in list(model.modules()):
        for name, child in list(parent._modules.items()):
            if child is None:
                continue
            if id(child) not in replacements:
                approximate = _approximation_of(child, hf_classifiers)
                if approximate is None:
                    continue
                replacements[id(child)] = (child, _replacement(child, approximate))
            parent._modules[name] = replacements[id(child)][1]
    return len(replacements)
