"""Bad input gets a clear error that names the problem, and nothing is written."""

import pytest
import torch

import gelu_ext

ops = torch.ops.gelu_ext


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.int8, torch.bool,
                                   torch.complex64, torch.complex128])
def test_non_floating_input(device, dtype):
    x = torch.ones(4, dtype=dtype, device=device)
    for call in (lambda: gelu_ext.gelu(x), lambda: ops.gelu(x),
                 lambda: ops.gelu_backward(x, x), lambda: ops.gelu_double_backward(x, x, x)):
        with pytest.raises(TypeError, match="floating-point") as info:
            call()
        assert f"but got {dtype}" in str(info.value), str(info.value)


def test_non_tensor_operands(device):
    x = torch.ones(4, device=device)
    for call, name, kind in [(lambda: gelu_ext.gelu([1.0]), "input", "list"),
                             (lambda: gelu_ext.bias_gelu(x, None), "bias", "NoneType"),
                             (lambda: gelu_ext.bias_gelu(1.5, x), "input", "float"),
                             (lambda: gelu_ext.geglu(x, 3.0), "up", "float"),
                             (lambda: gelu_ext.geglu_packed((x, x)), "h", "tuple")]:
        with pytest.raises(TypeError, match=f"expected '{name}' to be a torch.Tensor, but got "
                                            f"{kind}"):
            call()


@pytest.mark.parametrize("bad", ["exact", "Tanh", "", "gelu", "erf"])
def test_bad_approximate(device, bad):
    x = torch.ones(3, device=device)
    for call in (lambda: gelu_ext.gelu(x, bad), lambda: ops.gelu(x, bad),
                 lambda: ops.gelu_backward(x, x, bad), lambda: gelu_ext.GELU(bad)):
        with pytest.raises(ValueError, match="'none', 'tanh' or 'sigmoid'"):
            call()


def test_backward_shape_mismatch(device):
    x, grad = torch.ones(3, 4, device=device), torch.ones(4, 3, device=device)
    with pytest.raises(RuntimeError, match="same shape"):
        ops.gelu_backward(grad, x)
    with pytest.raises(RuntimeError, match="same shape"):  # no broadcasting either
        ops.gelu_backward(torch.ones(1, 4, device=device), x)
    with pytest.raises(RuntimeError, match="same shape"):
        ops.gelu_double_backward(x, grad, x)


def test_backward_dtype_mismatch(device):
    x = torch.ones(3, device=device)
    with pytest.raises(TypeError, match="same dtype"):
        ops.gelu_backward(x.double(), x)
    with pytest.raises(TypeError, match="same dtype"):
        ops.gelu_double_backward(x, x.half(), x)


def test_backward_device_mismatch():
    x = torch.ones(3)
    other = torch.ones(3, device="meta")
    with pytest.raises(RuntimeError, match="must be on the same device, but got meta and cpu"):
        ops.gelu_backward(other, x)
    if torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="same device"):
            ops.gelu_backward(x.cuda(), x)


def allocations_during(call, device):
    """The allocations made while call() runs (and raises): profiled CPU allocations, or the CUDA
    caching allocator's count of them."""
    if device == "cuda":
        torch.cuda.synchronize()
        before = torch.cuda.memory_stats().get("allocation.all.allocated", 0)
        call()
        return torch.cuda.memory_stats().get("allocation.all.allocated", 0) - before
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        call()
    return [(e.name, e.cpu_memory_usage) for e in prof.events() if e.cpu_memory_usage > 0]


def test_nothing_is_written_on_error(device):
    """Refused calls fail before anything is allocated or computed (no op writes its operands, so
    there is nothing else a refused call could write), whatever the layer that refuses: the C++
    op's checks, the Python functions', or the modules'."""
    x, b = torch.randn(3, 5, device=device), torch.randn(5, device=device)
    row, wide, narrow = torch.ones(1, 5, device=device), x.double(), x.half()
    module = gelu_ext.BiasGELU(5).to(device)
    before = module.bias.detach().clone()
    refused = [(RuntimeError, lambda: ops.gelu_backward(row, x)),
               (RuntimeError, lambda: ops.gelu_double_backward(x, x, x[:, :4])),
               (TypeError, lambda: ops.gelu_backward(wide, x)),
               (RuntimeError, lambda: gelu_ext.bias_gelu(x, b[:4])),
               (TypeError, lambda: gelu_ext.geglu(x, narrow)),
               (RuntimeError, lambda: gelu_ext.geglu_packed(x)),
               (ValueError, lambda: gelu_ext.gelu(x, "bogus")),
               (RuntimeError, lambda: module(x[:, :4]))]
    for error, call in refused:
        def refuse():
            with pytest.raises(error):
                call()
        assert not allocations_during(refuse, device), "allocated before refusing"
    torch.testing.assert_close(module.bias.detach(), before, rtol=0, atol=0)
