"""CUDA-only behaviour: agreement with the CPU, streams, devices, alignment and large tensors.
Skipped, with the reason shown, where no GPU is visible or the CUDA backend was not built."""

import pytest
import torch
from conftest import FLOAT_DTYPES, HALF_DTYPES, all_values, binade_samples, requires_cuda

import gelu_ext
from gelu_ext.reference import ulp_error

pytestmark = requires_cuda
ops = torch.ops.gelu_ext


def test_cuda_backend_is_registered():
    assert torch._C._dispatch_has_kernel_for_dispatch_key("gelu_ext::gelu", "CUDA")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_cpu_and_cuda_agree(approximate, dtype):
    if dtype in HALF_DTYPES:
        x = all_values(dtype)
    else:
        x = torch.cat([binade_samples(dtype, per_binade=16),
                       torch.linspace(-40, 40, 100001, dtype=dtype)])
    one = torch.ones_like(x)
    for cpu, gpu in [
        (gelu_ext.gelu(x, approximate), gelu_ext.gelu(x.cuda(), approximate)),
        (ops.gelu_backward(one, x, approximate), ops.gelu_backward(one.cuda(), x.cuda(), approximate)),
    ]:
        gpu = gpu.cpu()
        same = (cpu == gpu) | (cpu.isnan() & gpu.isnan())
        # Both are within the stated bounds of the exact value, so within twice that of each other.
        assert same.all() or ulp_error(gpu[~same], cpu[~same].double()).max() <= 2


def test_current_stream_is_used():
    x = torch.randn(1 << 20, device="cuda")
    expected = gelu_ext.gelu(x)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        y = gelu_ext.gelu(x)
        dx = ops.gelu_backward(torch.ones_like(x), x)
    stream.synchronize()
    assert torch.equal(y, expected)
    assert dx.isfinite().all()


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_second_device():
    x = torch.randn(1000, device="cuda:1")
    y = gelu_ext.gelu(x)
    assert y.device == x.device
    assert torch.equal(y.cpu(), gelu_ext.gelu(x.to("cuda:0")).cpu())


@pytest.mark.parametrize("offset", [1, 2, 3])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_unaligned_and_odd_lengths(dtype, offset):
    # Views starting off a 16-byte boundary, and lengths that are no multiple of the vector width,
    # against an aligned copy.
    base = torch.randn(4099, device="cuda").to(dtype)
    x = base[offset:offset + 4093]
    assert torch.equal(gelu_ext.gelu(x), gelu_ext.gelu(x.clone()))


@pytest.mark.slow
def test_more_than_two_to_the_31_elements():
    # 64-bit indexing: 2^31 + 5 float16 elements (4 GiB in, 4 GiB out).
    if torch.cuda.get_device_properties(0).total_memory < 12 * 2**30:
        pytest.skip("needs 12 GiB of GPU memory")
    n = (1 << 31) + 5
    x = torch.full((n,), -1.0, dtype=torch.float16, device="cuda")
    x[-3:] = 2.0
    y = gelu_ext.gelu(x)
    assert y[-3:].tolist() == [gelu_ext.gelu(torch.tensor(2.0, dtype=torch.float16)).item()] * 3
    assert y[:1000].eq(y[0]).all() and y[-1000:-3].eq(y[0]).all()
    del x, y
    torch.cuda.empty_cache()
