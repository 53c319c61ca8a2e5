"""torch.compile: zero graph breaks, the same results as eager, and a model that trains."""

import pytest
import torch
from torch import nn

import gelu_ext

ops = torch.ops.gelu_ext


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def mlp(activation, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(16, 64), activation, nn.Linear(64, 64), activation,
                         nn.Linear(64, 2))


def test_no_graph_breaks(approximate):
    model = mlp(gelu_ext.GELU(approximate))
    x = torch.randn(8, 16)
    explanation = torch._dynamo.explain(model)(x)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1, explanation


def test_fullgraph_matches_eager(device, approximate):
    def f(x):
        return gelu_ext.gelu(x * 2, approximate) + ops.gelu(x, approximate)

    x = torch.randn(1000, device=device, requires_grad=True)
    compiled = torch.compile(f, fullgraph=True)
    y, y_eager = compiled(x), f(x)
    torch.testing.assert_close(y, y_eager, rtol=0, atol=0)
    (dx,) = torch.autograd.grad(y.sum(), x)
    (dx_eager,) = torch.autograd.grad(y_eager.sum(), x)
    torch.testing.assert_close(dx, dx_eager, rtol=1e-6, atol=1e-7)


def test_dynamic_shapes(device):
    compiled = torch.compile(lambda t: gelu_ext.gelu(t, "tanh"), fullgraph=True, dynamic=True)
    for n in (5, 17, 1000):
        x = torch.randn(n, 3, device=device)
        torch.testing.assert_close(compiled(x), gelu_ext.gelu(x, "tanh"), rtol=0, atol=0)


def train(model, steps=200):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(512, 16, generator=g)
    y = (x[:, :8].sum(1) * x[:, 8:].sum(1) > 0).long()  # a task no linear model can solve
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_compiled_mlp_trains_like_nn_gelu(approximate):
    ours = train(torch.compile(mlp(gelu_ext.GELU(approximate)), fullgraph=True))
    theirs = train(mlp(nn.GELU(approximate)))
    assert ours[-1] < 0.5 * ours[0], "the loss must fall"
    # Same initialisation and data: the curves agree to float32 rounding.
    assert abs(ours[-1] - theirs[-1]) < 1e-3, (ours[-1], theirs[-1])


@pytest.mark.parametrize("strict", [True, False])
def test_export(strict):
    # torch.export keeps the ops as single nodes, in both tracing modes, and the exported program
    # computes what the module does.
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 16)
            self.bias = nn.Parameter(torch.randn(16))

        def forward(self, x):
            h = gelu_ext.bias_gelu(self.proj(x), self.bias)
            return gelu_ext.geglu_packed(h) + gelu_ext.gelu(h[..., :8], "tanh")

    torch.manual_seed(0)
    block, x = Block(), torch.randn(4, 8)
    program = torch.export.export(block, (x,), strict=strict)
    targets = {str(n.target) for n in program.graph.nodes if n.op == "call_function"}
    assert {"gelu_ext.bias_gelu.default", "gelu_ext.geglu_packed.default",
            "gelu_ext.gelu.default"} <= targets, targets
    torch.testing.assert_close(program.module()(x), block(x), rtol=0, atol=0)


@pytest.mark.filterwarnings("ignore:`torch.jit")  # deprecated in recent torch (Future/Deprecation)
def test_torchscript(tmp_path, approximate):
    # A scripted model keeps working after replace_gelu: the modules compile with torch.jit.script,
    # compute what they compute in eager mode, differentiate twice, and survive save and load.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16, bias=False), gelu_ext.BiasGELU(16, approximate),
                          gelu_ext.GELU(approximate), gelu_ext.GEGLU(approximate))
    with torch.no_grad():
        model[1].bias.normal_()
    scripted = torch.jit.script(model)
    torch.jit.save(scripted, tmp_path / "model.pt")
    loaded = torch.jit.load(tmp_path / "model.pt")
    x = torch.randn(4, 8, dtype=torch.float64, requires_grad=True)
    model, scripted, loaded = model.double(), scripted.double(), loaded.double()
    (expected,) = torch.autograd.grad(model(x).sum(), x, create_graph=True)
    expected_second = torch.autograd.grad(expected.sum(), x)
    for m in (scripted, loaded):
        torch.testing.assert_close(m(x), model(x), rtol=0, atol=0)
        (got,) = torch.autograd.grad(m(x).sum(), x, create_graph=True)
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
        torch.testing.assert_close(torch.autograd.grad(got.sum(), x), expected_second,
                                   rtol=0, atol=0)
