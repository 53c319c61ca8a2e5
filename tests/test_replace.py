"""gelu_ext.replace_gelu: what it swaps, what it leaves alone, and that swapped models compute,
train and compile like the originals. The Hugging Face tests skip when transformers is missing."""

import copy
import math
import os
import sys

import pytest
import torch
from torch import nn

import gelu_ext
from conftest import FORWARD_ULPS, assert_ulps
from gelu_ext.reference import torch_reference

# Tiny models are built from configs; nothing may be fetched from the hub.
os.environ["HF_HUB_OFFLINE"] = "1"

EPS32 = torch.finfo(torch.float32).eps
HF_SKIP_REASON = "transformers is not installed (pip install '.[hf]'): Hugging Face tests skipped"


def assert_outputs_close(actual, expected):
    """Model outputs agree to float32 rounding: the activations differ by a few ulps (F.gelu's
    own error), which the layers after them carry to the output. 8 ulps of the output's scale."""
    scale = expected.abs().max().item()
    torch.testing.assert_close(actual, expected, rtol=0, atol=8 * EPS32 * scale)


def assert_grads_close(model, reference):
    """Gradients agree to float32 rounding. Backprop rounds at the scale of the largest gradients
    flowing, and some tensors' exact gradients nearly cancel (or are 0, leaving rounding noise),
    so errors are measured against the largest gradient of the model: 8 ulps of it."""
    scale = max(q.grad.abs().max().item() for q in reference.parameters() if q.grad is not None)
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert torch.isfinite(p.grad).all(), name
        torch.testing.assert_close(p.grad, q.grad, rtol=0, atol=8 * EPS32 * scale,
                                   msg=lambda m: f"gradient of {name}: {m}")


def all_submodules(model):
    """Every registered (parent, name, child), shared instances once per registration."""
    for parent in model.modules():
        for name, child in parent._modules.items():
            if child is not None:
                yield parent, name, child


# --- torch.nn.GELU -------------------------------------------------------------------------------

@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_nn_gelu_is_swapped_for_the_same_function(approximate):
    old = nn.GELU(approximate)
    model = nn.Sequential(nn.Linear(4, 4), old)
    assert gelu_ext.replace_gelu(model) == 1
    new = model[1]
    assert type(new) is gelu_ext.GELU and new.approximate == approximate

    torch.manual_seed(0)
    x = torch.randn(100_000) * 3
    # The same mathematical function: within float32's bound of an independent float64
    # reference.
    assert_ulps(new(x), torch_reference(x, approximate)[0], FORWARD_ULPS[torch.float32],
                f"swapped {approximate}", x)
    # And the same values as nn.GELU, to rounding, where F.gelu itself is accurate: below
    # x = -1 its 1 + erf(x/sqrt 2) (1 + tanh) cancels, and F.gelu, not gelu_ext, drifts. nn.GELU
    # runs in float64: its float32 kernels are less accurate on some CPUs (test_forward.py).
    well_scaled = torch.linspace(-1, 4, 50_001)
    torch.testing.assert_close(new(well_scaled).double(), old(well_scaled.double()),
                               rtol=4 * EPS32, atol=0)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_mlp_outputs_and_gradients_match_after_swap(approximate):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(approximate), nn.Linear(64, 64),
                          nn.LayerNorm(64), nn.GELU(approximate), nn.Linear(64, 3))
    reference = copy.deepcopy(model)
    assert gelu_ext.replace_gelu(model) == 2
    assert not any(isinstance(m, nn.GELU) for m in model.modules())

    x = torch.randn(256, 16)
    assert_outputs_close(model(x), reference(x))
    model(x).square().sum().backward()
    reference(x).square().sum().backward()
    assert_grads_close(model, reference)


def test_nested_containers_and_any_attribute_name():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)
            self.act = nn.GELU()                      # a plain attribute is a submodule too
            self.activation_fn_with_a_long_name = nn.GELU("tanh")

    model = nn.Sequential(
        Block(),
        nn.ModuleList([nn.GELU(), nn.Sequential(nn.ReLU(), nn.GELU("tanh"))]),
        nn.ModuleDict({"left": nn.GELU(), "right": nn.ModuleDict({"deep": Block()})}),
    )
    expected = [(path, m.approximate) for path, m in model.named_modules()
                if isinstance(m, nn.GELU)]
    assert len(expected) == 7

    assert gelu_ext.replace_gelu(model) == 7
    after = dict(model.named_modules())
    for path, approximate in expected:
        assert type(after[path]) is gelu_ext.GELU and after[path].approximate == approximate, path
    assert isinstance(model[1][1][0], nn.ReLU)        # other activations are left alone
    assert gelu_ext.replace_gelu(model) == 0          # idempotent


def test_shared_instance_is_replaced_everywhere_and_counted_once():
    shared = nn.GELU("tanh")
    first = nn.Sequential(nn.Linear(4, 4), shared)
    second = nn.Sequential(nn.Linear(4, 4), shared)
    model = nn.Sequential(first, second)
    model.add_module("alias", shared)                 # registered twice in one parent, too
    model.add_module("same_first_again", first)       # and a shared parent
    other = nn.GELU("tanh")                           # equal but distinct: its own replacement
    model.add_module("other", other)

    assert gelu_ext.replace_gelu(model) == 2
    new = first[1]
    assert type(new) is gelu_ext.GELU and new.approximate == "tanh"
    assert second[1] is new and model.alias is new and model.same_first_again[1] is new
    assert model.other is not new and type(model.other) is gelu_ext.GELU
    assert not any(child is shared or child is other for _, _, child in all_submodules(model))


def test_modules_already_gelu_ext_are_kept_and_not_counted():
    ours = gelu_ext.GELU("sigmoid")
    model = nn.Sequential(ours, nn.GELU())
    assert gelu_ext.replace_gelu(model) == 1
    assert model[0] is ours
    assert type(model[1]) is gelu_ext.GELU


@pytest.mark.parametrize("not_a_module", [None, torch.randn(3), nn.GELU, lambda x: x, [nn.GELU()]])
def test_rejects_non_modules(not_a_module):
    with pytest.raises(TypeError, match="torch.nn.Module"):
        gelu_ext.replace_gelu(not_a_module)


def test_refuses_to_replace_the_root_itself():
    with pytest.raises(ValueError, match="itself"):
        gelu_ext.replace_gelu(nn.GELU())
    assert gelu_ext.replace_gelu(gelu_ext.GELU()) == 0


def test_modules_that_may_compute_something_else_are_left_alone():
    class ScaledGELU(nn.GELU):                        # a subclass may override forward
        def forward(self, x):
            return 2 * super().forward(x)

    patched = nn.GELU()
    patched.forward = lambda x: torch.relu(x)         # so may an instance

    model = nn.Sequential(ScaledGELU(), patched, nn.SiLU(), nn.ReLU())
    assert gelu_ext.replace_gelu(model) == 0
    assert type(model[0]) is ScaledGELU and model[1] is patched


def test_hooks_and_training_flag_move_to_the_replacement():
    seen = []
    model = nn.Sequential(nn.Linear(4, 4), nn.GELU()).eval()
    handle = model[1].register_forward_hook(lambda module, args, out: seen.append(module))
    pre_handle = model[1].register_forward_pre_hook(lambda module, args: (args[0] * 0,))

    assert gelu_ext.replace_gelu(model) == 1
    new = model[1]
    assert not new.training
    y = model(torch.randn(2, 4))
    assert seen == [new], "the forward hook must fire on the replacement"
    assert torch.equal(y, torch.zeros(2, 4)), "the pre-hook must feed the replacement"

    handle.remove()
    pre_handle.remove()
    y = model(torch.ones(2, 4))
    assert len(seen) == 1 and y.abs().sum() > 0, "the original handles must remove the hooks"


def test_every_kind_of_hook_moves_to_the_replacement():
    # Backward hooks (full and pre), hooks with keyword arguments and always-called forward
    # hooks, besides the plain forward ones above: each fires on the replacement, with its
    # gradients, and its original handle removes it there.
    events = []
    model = nn.Sequential(nn.Linear(4, 4), nn.GELU())
    old = model[1]
    handles = [
        old.register_full_backward_hook(
            lambda module, grad_in, grad_out: events.append(("backward", module, grad_in[0]))),
        old.register_full_backward_pre_hook(
            lambda module, grad_out: events.append(("backward pre", module, grad_out[0]))),
        old.register_forward_pre_hook(
            lambda module, args, kwargs: events.append(("pre kwargs", module, None)),
            with_kwargs=True),
        old.register_forward_hook(
            lambda module, args, kwargs, out: events.append(("kwargs", module, None)),
            with_kwargs=True, always_call=True),
    ]
    assert gelu_ext.replace_gelu(model) == 1
    new = model[1]
    x = torch.randn(2, 4, requires_grad=True)
    model(x).sum().backward()
    assert sorted(kind for kind, _, _ in events) == ["backward", "backward pre", "kwargs",
                                                     "pre kwargs"]
    assert all(module is new for _, module, _ in events)
    hidden = model[0](x).detach()
    grad_in = dict((kind, g) for kind, _, g in events)["backward"]
    expected = torch.ops.gelu_ext.gelu_backward(torch.ones_like(hidden), hidden)
    torch.testing.assert_close(grad_in, expected, rtol=0, atol=0)
    for handle in handles:
        handle.remove()
    events.clear()
    model(x).sum().backward()
    assert events == [], "the original handles must remove the hooks"


def test_works_without_transformers(monkeypatch):
    # None in sys.modules makes `import transformers...` raise ImportError.
    for name in [m for m in sys.modules if m == "transformers" or m.startswith("transformers.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "transformers", None)
    model = nn.Sequential(nn.GELU(), nn.GELU("tanh"))
    assert gelu_ext.replace_gelu(model) == 2
    assert [m.approximate for m in model] == ["none", "tanh"]


# --- Hugging Face transformers -------------------------------------------------------------------

@pytest.fixture(scope="module")
def hf():
    transformers = pytest.importorskip("transformers", reason=HF_SKIP_REASON)
    from transformers import activations
    return transformers, activations


def gelu_variant_computed_by(act):
    """Which of gelu_ext's functions `act` computes, judged on float64 values against the
    independent reference; None if it is none of them. The three differ from each other by at
    least 1e-4 somewhere on this range, and the tolerance is float64 rounding (plus FastGELU's
    sqrt(2/pi) cut to 10 decimals, worth ~3e-11 here)."""
    x = torch.linspace(-20, 20, 40_001, dtype=torch.float64)
    with torch.no_grad():
        y = act.double()(x)
    for approximate in ("none", "tanh", "sigmoid"):
        if torch.allclose(y, torch_reference(x, approximate)[0], rtol=1e-9, atol=1e-12):
            return approximate
    return None


def test_every_hf_activation_is_mapped_to_exactly_what_it_computes(hf):
    """Over all of ACT2FN: replace_gelu swaps an activation, for the right variant, exactly when
    its values are one of gelu_ext's three functions."""
    _, activations = hf
    mapped = {}
    for key in activations.ACT2CLS:
        act = activations.ACT2FN[key]
        computes = gelu_variant_computed_by(act)
        model = nn.Sequential(act)
        replaced = gelu_ext.replace_gelu(model)
        got = model[0].approximate if replaced else None
        assert got == computes, f"ACT2FN[{key!r}] ({type(act).__name__}) computes {computes}, " \
                                f"replace_gelu made it {got}"
        mapped[key] = got
    # The names the brief and the README promise, in the installed version.
    assert mapped["gelu"] == mapped["gelu_python"] == "none"
    assert mapped["gelu_new"] == mapped["gelu_fast"] == mapped["gelu_pytorch_tanh"] == "tanh"
    assert mapped["quick_gelu"] == "sigmoid"
    if "gelu_10" in mapped:
        assert mapped["gelu_10"] is None              # clipped: a different function


def test_hf_classes_by_name(hf):
    _, activations = hf
    expected = {"GELUActivation": "none", "NewGELUActivation": "tanh",
                "FastGELUActivation": "tanh", "QuickGELUActivation": "sigmoid",
                "GELUTanh": "tanh", "PytorchGELUTanh": "tanh", "AccurateGELUActivation": "tanh"}
    present = {name: getattr(activations, name) for name in expected if hasattr(activations, name)}
    assert {"GELUActivation", "NewGELUActivation", "FastGELUActivation",
            "QuickGELUActivation"} <= set(present)
    for name, cls in present.items():
        act = cls()
        assert gelu_variant_computed_by(copy.deepcopy(act)) == expected[name], name
        model = nn.Sequential(act)
        assert gelu_ext.replace_gelu(model) == 1, name
        assert model[0].approximate == expected[name], name
    # Constructor flags that change how, not what, they compute.
    python_erf = nn.Sequential(activations.GELUActivation(use_gelu_python=True))
    assert gelu_ext.replace_gelu(python_erf) == 1 and python_erf[0].approximate == "none"
    if hasattr(activations, "GELUTanh"):
        python_tanh = nn.Sequential(activations.GELUTanh(use_gelu_tanh_python=True))
        assert gelu_ext.replace_gelu(python_tanh) == 1 and python_tanh[0].approximate == "tanh"
    # A GELUActivation whose act was changed no longer says what it computes: left alone.
    changed = activations.GELUActivation()
    changed.act = torch.relu
    assert gelu_ext.replace_gelu(nn.Sequential(changed)) == 0


def test_clipped_gelu_is_left_alone(hf):
    transformers, activations = hf
    if not hasattr(activations, "ClippedGELUActivation"):
        pytest.skip("this transformers version has no ClippedGELUActivation")
    model = transformers.BertModel(bert_config(transformers, "gelu_10"))
    assert gelu_ext.replace_gelu(model) == 0
    acts = [layer.intermediate.intermediate_act_fn for layer in model.encoder.layer]
    assert all(type(a) is activations.ClippedGELUActivation for a in acts)


def bert_config(transformers, hidden_act):
    return transformers.BertConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=32, hidden_act=hidden_act,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)  # deterministic steps


def gpt2_config(transformers):
    return transformers.GPT2Config(
        vocab_size=100, n_positions=32, n_embd=32, n_layer=2, n_head=2, bos_token_id=0,
        eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)


# name -> (build the model, expected approximate, expected count). BertForMaskedLM has one
# activation in each layer's BertIntermediate and one in its MLM head's transform (2 + 1);
# GPT2LMHeadModel one in each block's MLP (2).
HF_MODELS = {
    "bert-gelu": (lambda t: t.BertForMaskedLM(bert_config(t, "gelu")), "none", 3),
    "bert-gelu_new": (lambda t: t.BertForMaskedLM(bert_config(t, "gelu_new")), "tanh", 3),
    "bert-quick_gelu": (lambda t: t.BertForMaskedLM(bert_config(t, "quick_gelu")), "sigmoid", 3),
    "gpt2": (lambda t: t.GPT2LMHeadModel(gpt2_config(t)), "tanh", 2),
}


@pytest.fixture(params=list(HF_MODELS))
def hf_model(request, hf):
    transformers, _ = hf
    build, approximate, count = HF_MODELS[request.param]
    torch.manual_seed(0)
    model = build(transformers)
    if request.param == "gpt2":
        assert model.config.activation_function == "gelu_new"   # GPT-2's default
    return model, approximate, count


def batch(seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 100, (4, 16), generator=g)


def test_hf_model_count_and_eval_outputs(hf_model):
    model, approximate, count = hf_model
    model.eval()
    ids = batch()
    with torch.no_grad():
        before = model(ids).logits
    old_types = {type(child) for _, _, child in all_submodules(model)}

    assert gelu_ext.replace_gelu(model) == count
    swapped = [child for _, _, child in all_submodules(model) if type(child) is gelu_ext.GELU]
    assert len(swapped) == count and all(a.approximate == approximate for a in swapped)
    new_types = {type(child) for _, _, child in all_submodules(model)}
    assert len(old_types - new_types) == 1, "every instance of the HF activation class is gone"

    with torch.no_grad():
        after = model(ids).logits
    assert_outputs_close(after, before)


def test_hf_model_trains_like_the_original(hf_model):
    model, _, count = hf_model
    reference = copy.deepcopy(model)
    assert gelu_ext.replace_gelu(model) == count
    model.train()
    reference.train()
    ids = batch()
    initial = {name: p.detach().clone() for name, p in model.named_parameters()}

    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss = model(ids, labels=ids).loss
    loss.backward()
    ref_loss = reference(ids, labels=ids).loss
    ref_loss.backward()
    assert math.isfinite(loss.item())
    assert_outputs_close(loss.detach(), ref_loss.detach())
    assert_grads_close(model, reference)

    opt.step()
    moved = [name for name, p in model.named_parameters()
             if p.grad.abs().max() > 0 and not torch.equal(p.detach(), initial[name])]
    with_grad = [name for name, p in model.named_parameters() if p.grad.abs().max() > 0]
    assert with_grad and moved == with_grad, "every parameter with a gradient must move"
    with torch.no_grad():
        assert model(ids, labels=ids).loss < loss, "one step on this batch lowers its loss"


@pytest.mark.parametrize("hf_model", ["bert-gelu", "gpt2"], indirect=True)
def test_hf_model_compiles(hf_model):
    # One check per model family: the activation's form does not change what Dynamo traces.
    model, _, count = hf_model
    assert gelu_ext.replace_gelu(model) == count
    model.eval()
    ids = batch()
    torch._dynamo.reset()
    try:
        compiled = torch.compile(model, fullgraph=True)   # gelu_ext adds no graph break
        with torch.no_grad():
            out = compiled(ids).logits
            eager = model(ids).logits
    finally:
        torch._dynamo.reset()
    assert_outputs_close(out, eager)
