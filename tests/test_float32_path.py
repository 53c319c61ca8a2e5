"""The float path of float32 data (csrc/math/f32_via_f32.h), run on the CPU, against the float64
torch reference: f within 1 ulp, f' and f'' within 2 ulps of the larger term, on samples of every
binade, a dense grid over [-20, 20] and the tails, and its fused passes on sampled operands. The
path computes in float only (no double, no approximate instruction), so these are the GPU's
bits. Every float32 input is checked by tools/check_float32_path.cpp, not here.
"""

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from conftest import APPROXIMATIONS, assert_within, binade_samples

from gelu_ext.reference import derivative_scales, torch_reference

ROOT = Path(__file__).resolve().parent.parent
CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")

FORMS = {"none": 0, "tanh": 1, "sigmoid": 2}
# The float path's bounds (f'' too within 2, where the double path gives 1).
BOUNDS = {"forward": 1.0, "backward": 2.0, "second": 2.0}

SHIM = r"""
#include "gelu_math.h"
using namespace gelu_ext;
using namespace gelu_ext::math;
template <Pass P, Approximate A>
void run(const float* const* in, float* const* out, long n) {
  using M = F32ViaF32Pass<P, A>;
  for (long i = 0; i < n; ++i) {
    float a[3], r[2];
    for (int k = 0; k < M::kRule.inputs; ++k) a[k] = in[k][i];
    M::apply(a, r);
    for (int k = 0; k < M::kRule.outputs; ++k) out[k][i] = r[k];
  }
}
template <Pass P>
void dispatch(int form, const float* const* in, float* const* out, long n) {
  if (form == 0) run<P, Approximate::kNone>(in, out, n);
  if (form == 1) run<P, Approximate::kTanh>(in, out, n);
  if (form == 2) run<P, Approximate::kSigmoid>(in, out, n);
}
extern "C" void float32_pass(int pass, int form, const float* const* in, float* const* out,
                             long n) {
  switch (pass) {
    case 0: return dispatch<Pass::kForward>(form, in, out, n);
    case 2: return dispatch<Pass::kDoubleBackward>(form, in, out, n);
    case 3: return dispatch<Pass::kBiasForward>(form, in, out, n);
    case 5: return dispatch<Pass::kGegluForward>(form, in, out, n);
    case 6: return dispatch<Pass::kGegluBackward>(form, in, out, n);
  }
}
"""


@pytest.fixture(scope="module")
def float_path(tmp_path_factory):
    build = tmp_path_factory.mktemp("float32_path")
    source = build / "shim.cpp"
    source.write_text(SHIM)
    library = build / "float32_path.so"
    command = [CXX, "-std=c++17", "-O2", "-shared", "-fPIC", "-ffp-contract=off",
               "-I", str(ROOT / "csrc"), str(source), "-o", str(library)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, f"building the float path failed:\n{result.stderr}"
    lib = ctypes.CDLL(str(library))

    def call(pass_code, approximate, inputs, outputs=1):
        inputs = [t.contiguous() for t in inputs]
        out = [torch.empty_like(inputs[0]) for _ in range(outputs)]
        ptrs = lambda ts: (ctypes.c_void_p * len(ts))(*[t.data_ptr() for t in ts])  # noqa: E731
        lib.float32_pass(pass_code, FORMS[approximate], ptrs(inputs), ptrs(out),
                         ctypes.c_long(inputs[0].numel()))
        return out

    return call


def arguments():
    """Every binade of both signs, subnormals included, a dense grid over [-20, 20], the tails."""
    grid = torch.linspace(-20, 20, 200001, dtype=torch.float32)
    tails = -torch.logspace(0, 1.6, 20001, dtype=torch.float64).float()
    return torch.cat([binade_samples(torch.float32, per_binade=32), grid, tails])


@pytest.mark.parametrize("approximate", APPROXIMATIONS)
def test_functions_within_bounds(float_path, approximate):
    x = arguments()
    f, d1, d2 = torch_reference(x, approximate)
    scale1, scale2 = derivative_scales(x, approximate)
    (y,) = float_path(0, approximate, [x])
    ones = torch.ones_like(x)
    gx_f1, gx_f2 = float_path(2, approximate, [ones, ones, x], outputs=2)
    zero = torch.zeros_like(f)
    assert_within(y, f, zero, BOUNDS["forward"], torch.float32, f"{approximate} f", x)
    assert_within(gx_f1, d1, scale1, BOUNDS["backward"], torch.float32, f"{approximate} f'", x)
    assert_within(gx_f2, d2, scale2, BOUNDS["second"], torch.float32, f"{approximate} f''", x)


@pytest.mark.parametrize("approximate", APPROXIMATIONS)
def test_limits_and_signs(float_path, approximate):
    x = torch.tensor([float("inf"), -float("inf"), 0.0, -0.0, float("nan"), 3e38, -3e38])
    (y,) = float_path(0, approximate, [x])
    ones = torch.ones_like(x)
    d1, d2 = float_path(2, approximate, [ones, ones, x], outputs=2)
    expected_f = torch.tensor([float("inf"), -0.0, 0.0, -0.0, float("nan"), 3e38, -0.0])
    expected_d1 = torch.tensor([1.0, -0.0, 0.5, 0.5, float("nan"), 1.0, -0.0])
    for got, want, what in [(y, expected_f, "f"), (d1, expected_d1, "f'")]:
        same = (got == want) & (got.signbit() == want.signbit()) | (got.isnan() & want.isnan())
        assert same.all(), f"{approximate} {what}: {got.tolist()} against {want.tolist()}"
    assert (d2[[0, 1, 5, 6]] == 0).all() and d2[[0, 1, 5, 6]].signbit().all()


@pytest.mark.parametrize("approximate", APPROXIMATIONS)
def test_fused_passes_within_bounds(float_path, approximate):
    g = torch.Generator().manual_seed(1)
    n = 100000
    x = torch.randn(n, generator=g) * 4
    # Biases of the same size, and far smaller ones: sums that float cannot hold.
    b = torch.where(torch.rand(n, generator=g) < 0.5, torch.randn(n, generator=g),
                    x * torch.randn(n, generator=g) * 2.0**-30)
    up = torch.randn(n, generator=g) * 2.0 ** torch.randint(-60, 60, (n,), generator=g)
    grad = torch.randn(n, generator=g)
    z = x.double() + b.double()  # exact
    f_z, _, _ = torch_reference(z, approximate)
    (y,) = float_path(3, approximate, [x, b])
    assert_within(y, f_z, torch.zeros_like(f_z), BOUNDS["forward"], torch.float32,
                  f"{approximate} bias_gelu", x)
    f, d1, _ = torch_reference(x, approximate)
    scale1, _ = derivative_scales(x, approximate)
    (y,) = float_path(5, approximate, [x, up])
    assert_within(y, f * up.double(), torch.zeros_like(f), BOUNDS["forward"], torch.float32,
                  f"{approximate} geglu", x)
    dgate, dup = float_path(6, approximate, [grad, x, up], outputs=2)
    factor = grad.double() * up.double()
    assert_within(dgate, factor * d1, factor.abs() * scale1, BOUNDS["backward"], torch.float32,
                  f"{approximate} geglu backward dgate", x)
    assert_within(dup, grad.double() * f, torch.zeros_like(f), BOUNDS["forward"], torch.float32,
                  f"{approximate} geglu backward dup", x)
