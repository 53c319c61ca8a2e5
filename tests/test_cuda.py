"""CUDA-only behaviour: agreement with the CPU, streams, CUDA graphs, devices, alignment and large
tensors. Skipped, with the reason shown, where no GPU is visible; where one is, a build without
the CUDA backend fails them (conftest.py)."""

import pytest
import torch
from conftest import (FLOAT_DTYPES, FLOAT_PATH_ULPS, FORWARD_ULPS, HALF_DTYPES, MIXED_PATH_ULPS,
                      all_values, assert_devices_agree, assert_same_bits, assert_within,
                      binade_samples, requires_cuda)

import gelu_ext
from gelu_ext.reference import (cuda_float32_path, reference_and_scales,
                                same_path_on_cpu_and_cuda)

pytestmark = requires_cuda
ops = torch.ops.gelu_ext


def test_cuda_backend_is_registered():
    assert torch._C._dispatch_has_kernel_for_dispatch_key("gelu_ext::gelu", "CUDA")


def agreement_inputs(dtype):
    if dtype in HALF_DTYPES:
        x = all_values(dtype)
        return x[x.isfinite()]
    return torch.cat([binade_samples(dtype, per_binade=16),
                      torch.linspace(-40, 40, 100001, dtype=dtype)])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_cpu_and_cuda_agree(approximate, dtype):
    """f, grad * f' and (gg * f', gg * grad * f'') on both devices: the same bits where both
    take the same path (gelu_ext.reference.same_path_on_cpu_and_cuda); otherwise float32 within
    its path's bounds of the exact value (of max(|exact|, terms) for the derivatives: the float
    path's or the mixed form's, or the double path's where the exact form's tail differs by its
    division) and float64 within 2 ulps of the CPU's, at max(|result|, terms)."""
    x = agreement_inputs(dtype)
    g = torch.Generator().manual_seed(0)
    grad, gg = ((torch.randn(x.shape, generator=g) * 2).to(dtype) for _ in range(2))
    f, d1, d2, s1, s2 = reference_and_scales(x, approximate)
    wide = {"grad": grad.double(), "gg": gg.double()}
    passes = [
        ("f", lambda *t: [ops.gelu(t[2], approximate)], f, torch.zeros_like(f), "f"),
        ("grad * f'", lambda *t: [ops.gelu_backward(t[0], t[2], approximate)],
         wide["grad"] * d1, wide["grad"].abs() * s1, "f'"),
        ("gg * f'", lambda *t: [ops.gelu_double_backward(t[1], t[0], t[2], approximate)[0]],
         wide["gg"] * d1, wide["gg"].abs() * s1, "f'"),
        ("gg * grad * f''", lambda *t: [ops.gelu_double_backward(t[1], t[0], t[2], approximate)[1]],
         wide["gg"] * wide["grad"] * d2, (wide["gg"] * wide["grad"]).abs() * s2, "f''"),
    ]
    capability = torch.cuda.get_device_capability()
    same_path = same_path_on_cpu_and_cuda(dtype, approximate, capability)
    bounds = {"f32_via_f32": FLOAT_PATH_ULPS, "f32_via_mixed": MIXED_PATH_ULPS}.get(
        cuda_float32_path(capability))
    for name, run, exact, scale, term in passes:
        (cpu,) = run(grad, gg, x)
        (gpu,) = run(grad.cuda(), gg.cuda(), x.cuda())
        gpu = gpu.cpu()
        what = f"{name}, {dtype} {approximate}"
        if same_path:
            assert_same_bits(gpu, cpu, what)
        elif dtype == torch.float32:
            bound = bounds[term] if bounds else FORWARD_ULPS[dtype]
            assert_within(gpu, exact, scale, bound, dtype, what, x)
        else:
            assert_devices_agree(gpu, cpu, scale, what)


# Every op, as a function of x (the operand written last) and of ready operands a, b shaped like
# x and bias (64 values).
STREAM_CASES = {
    "gelu": lambda x, a, b, bias: [gelu_ext.gelu(x)],
    "gelu_backward": lambda x, a, b, bias: [ops.gelu_backward(a, x)],
    "gelu_double_backward": lambda x, a, b, bias: list(ops.gelu_double_backward(a, b, x)),
    "bias_gelu": lambda x, a, b, bias: [gelu_ext.bias_gelu(x, bias)],
    "bias_gelu_backward": lambda x, a, b, bias: list(ops.bias_gelu_backward(a, x, bias)),
    "geglu": lambda x, a, b, bias: [gelu_ext.geglu(x, a)],
    "geglu_backward": lambda x, a, b, bias: list(ops.geglu_backward(a, x, b)),
    "geglu_packed": lambda x, a, b, bias: [gelu_ext.geglu_packed(x)],
    "geglu_packed_backward": lambda x, a, b, bias: [ops.geglu_packed_backward(a[:, :32], x)],
}


@pytest.mark.parametrize("name", list(STREAM_CASES))
def test_ops_run_on_the_current_stream(name):
    """On a busy non-default stream, the op's input is written behind a long kernel (a sleep)
    and the op queued after it: launched on the current stream, it reads the written values;
    launched on any other stream, it would read the NaNs there before (the sleep outlasts any
    launch)."""
    run = STREAM_CASES[name]
    source, a, b = (torch.randn(4096, 64, device="cuda") for _ in range(3))
    bias = torch.randn(64, device="cuda")
    expected = run(source, a, b, bias)
    x = torch.full_like(source, float("nan"))
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # about 0.1 s at 2 GHz
        x.copy_(source)
        got = run(x, a, b, bias)
    side.synchronize()
    assert len(got) == len(expected)
    for k, (g, e) in enumerate(zip(got, expected)):
        assert_same_bits(g, e, f"{name} output {k} on a side stream")


def test_cuda_graph_capture_and_replay():
    """Every op captured in a CUDA graph (on contiguous operands, chunked halves and a
    transposed input: each kernel shape) and replayed on new values in the captured buffers
    gives what eager calls give on them."""
    x = torch.randn(256, 64, device="cuda")
    grad = torch.randn(256, 64, device="cuda")
    bias = torch.randn(64, device="cuda")

    def run():
        gate, up = x.chunk(2, dim=-1)
        return [gelu_ext.gelu(x), gelu_ext.gelu(x.t()), *ops.gelu_double_backward(grad, grad, x),
                gelu_ext.bias_gelu(x, bias), *ops.bias_gelu_backward(grad, x, bias),
                gelu_ext.geglu(gate, up), *ops.geglu_backward(grad[:, :32], gate, up),
                ops.geglu_packed_backward(grad[:, :32], x)]

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up, as torch.cuda.graph asks
        run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = run()
    for seed in (1, 2):
        g = torch.Generator(device="cuda").manual_seed(seed)
        for t in (x, grad, bias):
            t.copy_(torch.randn(t.shape, device="cuda", generator=g) * 3)
        graph.replay()
        torch.cuda.synchronize()
        for k, (got, want) in enumerate(zip(captured, run())):
            assert_same_bits(got, want, f"replay {seed}, output {k}")


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_second_device():
    x = torch.randn(1000, device="cuda:1")
    y = gelu_ext.gelu(x)
    assert y.device == x.device
    assert_same_bits(y.cpu(), gelu_ext.gelu(x.to("cuda:0")).cpu(), "cuda:1 against cuda:0")


@pytest.mark.parametrize("offset", [1, 2, 3])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_unaligned_and_odd_lengths(dtype, offset):
    # Views starting off a 16-byte boundary (the strided kernel), and lengths that are no
    # multiple of the vector width, against an aligned copy (the vector kernel).
    base = torch.randn(4099, device="cuda").to(dtype)
    base[::5] = -0.0
    x = base[offset:offset + 4093]
    assert_same_bits(gelu_ext.gelu(x), gelu_ext.gelu(x.clone()), f"offset {offset}")


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
