import os

import pytest
import torch

import gelu_ext  # noqa: F401  (registers the ops)

FLOAT_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
HALF_DTYPES = [torch.float16, torch.bfloat16]
# 16-bit results are correctly rounded: 0.5 ulp, with slack for the float64 reference's own
# 1e-12 error.
CORRECTLY_ROUNDED = 0.5 + 1e-6

# Largest error of f, in ulps of the exact value, on every input tested.
FORWARD_ULPS = {torch.float32: 1.0, torch.float16: CORRECTLY_ROUNDED,
                torch.bfloat16: CORRECTLY_ROUNDED, torch.float64: 2.0}
# Largest errors of f' and f'', in ulps of the dtype at max(|exact|, terms): where f' or f''
# crosses zero its terms cancel and relative error is meaningless, so the error is bounded by
# ulps of the larger term instead (gelu_ext.reference.derivative_scales).
FIRST_DERIVATIVE_ULPS = {torch.float32: 2.0, torch.float64: 2.0, torch.float16: CORRECTLY_ROUNDED,
                         torch.bfloat16: CORRECTLY_ROUNDED}
SECOND_DERIVATIVE_ULPS = {torch.float32: 1.0, torch.float64: 1.0,
                          torch.float16: CORRECTLY_ROUNDED, torch.bfloat16: CORRECTLY_ROUNDED}

APPROXIMATIONS = ["none", "tanh", "sigmoid"]

CUDA_BUILT = torch._C._dispatch_has_kernel_for_dispatch_key("gelu_ext::gelu", "CUDA")
CUDA_SKIP = "; ".join(
    reason for reason, missing in [("no CUDA GPU visible", not torch.cuda.is_available()),
                                   ("gelu_ext was built without CUDA", not CUDA_BUILT)] if missing
) or None
requires_cuda = pytest.mark.skipif(CUDA_SKIP is not None, reason=f"CUDA test: {CUDA_SKIP}")

DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture(params=APPROXIMATIONS)
def approximate(request):
    return request.param


def all_values(dtype):
    """Every bit pattern of a 16-bit float type, NaNs and infinities included."""
    return torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(dtype)


def binade_samples(dtype, per_binade=64, seed=0):
    """Random finite values from every binade of `dtype`, both signs, subnormals included."""
    bits = {torch.float32: (torch.int32, 23, 254), torch.float64: (torch.int64, 52, 2046)}
    int_dtype, mantissa_bits, max_biased = bits[dtype]
    g = torch.Generator().manual_seed(seed)
    exponents = torch.arange(0, max_biased + 1, dtype=torch.int64).repeat_interleave(per_binade)
    mantissas = torch.randint(0, 1 << mantissa_bits, exponents.shape, generator=g)
    pattern = (exponents << mantissa_bits) | mantissas
    positive = pattern.to(int_dtype).view(dtype)
    return torch.cat([positive, -positive])


def single_path_edges_f64():
    """float64 inputs at the edges of the CPU single path's domains (|x| < 20 for tanh, < 380 for
    sigmoid, gelu_math.h) and a step either side, where the kernels switch paths."""
    edges = torch.tensor([20.0, 380.0], dtype=torch.float64)
    edges = torch.cat([edges, edges.nextafter(torch.zeros(2, dtype=torch.float64)),
                       edges.nextafter(torch.full((2,), 1e3, dtype=torch.float64))])
    return torch.cat([edges, -edges, torch.linspace(-400, 400, 81, dtype=torch.float64)])


def assert_within(y, exact, scale, bound, dtype, what, x):
    """Every element of y within `bound` ulps of the dtype at max(|exact|, scale) (float64)."""
    from gelu_ext.reference import ulp

    unit = ulp(torch.maximum(exact.abs(), scale), dtype)
    err = (y.double() - exact).abs() / unit
    worst = int(err.argmax())
    assert err[worst].item() <= bound, (
        f"{what}: error {err[worst].item():.3f} ulp > {bound} at x={x[worst].item()!r}: "
        f"got {y[worst].item()!r}, expected {exact[worst].item()!r}")


def assert_ulps(y, ref, bound, what, x=None):
    """Every element of y within `bound` ulps of the float64 reference."""
    from gelu_ext.reference import ulp_error

    if y.numel() == 0:
        return
    err = ulp_error(y, ref).flatten()
    worst = int(err.argmax())
    max_err = err[worst].item()
    where = f"x={x.flatten()[worst].item()!r}" if x is not None else f"index {worst}"
    assert max_err <= bound, (f"{what}: max error {max_err:.3f} ulp > {bound} at {where}: got "
                              f"{y.flatten()[worst].item()!r}, expected {ref.flatten()[worst].item()!r}")


def cpu_supports(isa):
    """Whether this CPU runs the kernels for `isa` ("avx512", "avx2" or "portable")."""
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    needed = {"avx512": ["avx512f", "avx512dq", "avx512bw", "avx512vl"],
              "avx2": ["avx2", "fma", "f16c"], "portable": []}[isa]
    return all(f" {flag}" in flags for flag in needed)
