"""torch.export with dynamic shapes, and an exported program saved and loaded: the ops stay
single nodes, the fake kernels carry symbolic shapes, and the loaded program computes what the
module does at sizes other than the traced ones."""

import pytest
import torch
from conftest import assert_same_bits
from torch import nn

import gelu_ext


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(32))

    def forward(self, x):
        h = gelu_ext.bias_gelu(x, self.bias, "tanh")
        return gelu_ext.geglu_packed(h) + gelu_ext.gelu(h[..., :16], "sigmoid")


TARGETS = {"gelu_ext.bias_gelu.default", "gelu_ext.geglu_packed.default", "gelu_ext.gelu.default"}


def export_dynamic(block, x):
    if not hasattr(torch.export, "Dim"):
        pytest.skip(f"torch {torch.__version__} has no torch.export.Dim")
    batch, length = torch.export.Dim("batch", min=2, max=64), torch.export.Dim("length", max=128)
    return torch.export.export(block, (x,), dynamic_shapes={"x": {0: batch, 1: length}})


def test_export_with_dynamic_shapes_and_save_load(tmp_path):
    torch.manual_seed(0)
    block = Block()
    program = export_dynamic(block, torch.randn(4, 6, 32))
    targets = {str(n.target) for n in program.graph.nodes if n.op == "call_function"}
    assert TARGETS <= targets, targets
    torch.export.save(program, tmp_path / "block.pt2")
    loaded = torch.export.load(tmp_path / "block.pt2")
    for shape in [(4, 6, 32), (2, 1, 32), (17, 33, 32), (64, 128, 32)]:
        x = torch.randn(*shape)
        expected = block(x)
        for name, p in [("exported", program), ("loaded", loaded)]:
            assert_same_bits(p.module()(x), expected, f"{name} at {shape}")
    # Outside the declared range, the guards refuse rather than compute something else.
    with pytest.raises(Exception, match="batch|x.size|Expected input|range|constraint"):
        loaded.module()(torch.randn(65, 6, 32))
