"""DTensor sharding strategies for every op, so that the ops take DTensor operands (tensor and
sequence parallelism), as F.gelu does.

Each strategy lists, for one mesh dimension, the placements the op computes correctly on each
shard: ([output placements], [input placements]); DTensor picks the cheapest for the operands'
placements, redistributing them where none matches, and repeats this over the mesh's dimensions.
- Elementwise ops (gelu, geglu and their backward ops) keep any Shard or Replicate placement,
  the same for every operand. Partial operands are reduced first: GELU is not linear.
- bias_gelu: the bias is sharded like the input's last dimension, or replicated where the input
  is sharded on another dimension; there grad_bias, a sum over rows, comes out Partial (a sum
  over shards).
- geglu_packed: h's last dimension holds [gate, up], which a shard would split wrongly, so it
  is replicated (DTensor gathers it); any other dimension may be sharded.

Importing DTensor costs about half a second, more than the rest of `import gelu_ext`, so the
strategies are registered when torch.distributed.tensor has been imported: at once if it has,
otherwise right after its import (an import hook).
"""

import dataclasses
import importlib.abc
import importlib.util
import sys
import warnings

import torch

_DTENSOR_MODULE = "torch.distributed.tensor"
_ops = torch.ops.gelu_ext


def _strategies():
    """op -> its strategy function (the op's arguments, tensors given as DTensorSpecs ->
    [(output placements, tensor input placements)])."""
    from torch.distributed.tensor import Partial, Replicate, Shard

    def alike(outputs, inputs, last_dimension=True):
        """Every operand and output with one placement: Replicate, or Shard of any dimension
        (but the last, unless last_dimension)."""
        def strategy(first, *args):
            dimensions = range(first.ndim if last_dimension else first.ndim - 1)
            return [([p] * outputs, [p] * inputs)
                    for p in [Replicate(), *(Shard(d) for d in dimensions)]]
        return strategy

    def bias_gelu(input, bias, approximate="none"):
        last = input.ndim - 1
        return [([Replicate()], [Replicate(), Replicate()])] + [
            ([Shard(d)], [Shard(d), Shard(0) if d == last else Replicate()])
            for d in range(input.ndim)]

    def bias_gelu_backward(grad_output, input, bias, approximate="none"):
        last = input.ndim - 1
        return [([Replicate(), Replicate()], [Replicate()] * 3)] + [
            ([Shard(d), Shard(0)] if d == last else [Shard(d), Partial()],
             [Shard(d), Shard(d), Shard(0) if d == last else Replicate()])
            for d in range(input.ndim)]

    return {
        _ops.gelu.default: alike(1, 1),
        _ops.gelu_backward.default: alike(1, 2),
        _ops.gelu_double_backward.default: alike(2, 3),
        _ops.geglu.default: alike(1, 2),
        _ops.geglu_backward.default: alike(2, 3),
        _ops.bias_gelu.default: bias_gelu,
        _ops.bias_gelu_backward.default: bias_gelu_backward,
        # h = [gate, up] (and grad_h) in the last dimension: never sharded there
        _ops.geglu_packed.default: alike(1, 1, last_dimension=False),
        _ops.geglu_packed_backward.default: alike(1, 2, last_dimension=False),
    }


def _register():
    try:
        from torch.distributed.tensor import DTensor
        from torch.distributed.tensor.experimental import register_sharding
        cache_keys = DTensor._op_dispatcher.sharding_propagator.op_to_schema_info
        for op, strategy in _strategies().items():
            register_sharding(op)(strategy)
            # DTensor caches its decision for a call under the operands' placements and the
            # arguments from static_argnum on, which register_sharding sets at the first int
            # argument: none here. approximate must be in the key, since torch 2.6 passes the
            # cached call's arguments with redistributed operands.
            approximate = [a.name for a in op._schema.arguments].index("approximate")
            cache_keys[op] = dataclasses.replace(cache_keys[op], static_argnum=approximate)
    except Exception as e:  # not to break the import of DTensor, which may run this
        warnings.warn(f"gelu_ext: its ops take no DTensor operands here: registering their "
                      f"sharding strategies failed: {e!r}")


class _RegisterAfterImport(importlib.abc.MetaPathFinder):
    """Finds torch.distributed.tensor as the other finders do, and has its loader register the
    strategies once the module has run."""

    def find_spec(self, name, path, target=None):
        if name != _DTENSOR_MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run_module = spec.loader.exec_module

        def run_then_register(module):
            run_module(module)
            _register()

        spec.loader.exec_module = run_then_register
        return spec


def register_when_dtensor_is_imported():
    if not torch.distributed.is_available():
        return
    if _DTENSOR_MODULE in sys.modules:
        _register()
    else:
        sys.meta_path.insert(0, _RegisterAfterImport())
