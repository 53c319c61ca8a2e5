"""The CPU kernels for each instruction set (AVX-512, AVX2 + FMA, portable) must agree bit for
bit, on every dtype and pass: for float32 and float64 they compute the same operations in the
same order; for 16-bit data each returns the correctly rounded result (its narrow float path uses
its own reciprocal, and falls back to the double path where its rounding test fails). Every
16-bit value is included, so together with the exhaustive tests of the default kernels this
checks all of them exhaustively."""

import os
import subprocess
import sys

import pytest
import torch
from conftest import (CORRECTLY_ROUNDED, TINY_INPUT, assert_ulps, assert_within, cpu_supports,
                      mp_exact)

import gelu_ext  # noqa: F401
from gelu_ext.reference import derivative_scales, torch_reference

ISAS = ["avx512", "avx2", "portable"]

# Each child process computes every pass on a fixed input set and saves the results.
CHILD = r"""
import sys, torch, gelu_ext
ops = torch.ops.gelu_ext
g = torch.Generator().manual_seed(0)
x64 = torch.cat([torch.randn(5000, generator=g, dtype=torch.float64) * 6,
                 torch.linspace(-80, 80, 3001, dtype=torch.float64),
                 torch.tensor([float("inf"), -float("inf"), float("nan"), 0.0, -0.0, 1e300, -1e300,
                               # float32 subnormals and the edges of former branches
                               # (16 of them, as the total must stay a multiple of 8)
                               1e-40, -1e-40, 3e-39, -3e-39, 1e-45, 2.0 ** -126, 2.0 ** -125,
                               -2.0 ** -125, 2.0 ** -124, -2.0 ** -124, 7.875, -7.875, 8.0, -8.0,
                               1e30, -1e30], dtype=torch.float64)])
every16 = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16)
out = {"isa": ops._cpu_isa()}
for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
    x = x64.to(dtype)
    if dtype.itemsize == 2:
        x = torch.cat([x, every16.view(dtype)])
    grad = torch.randn(x.shape, generator=g).to(dtype)
    for a in ("none", "tanh", "sigmoid"):
        out[(str(dtype), a)] = (ops.gelu(x, a), ops.gelu_backward(grad, x, a),
                                ops.gelu_backward(torch.ones_like(x), x, a),
                                *ops.gelu_double_backward(grad, grad, x, a),
                                ops.gelu(x[::3], a),  # a strided view too
                                ops.bias_gelu(x.view(-1, 1), grad[:1], a),
                                # grad_bias too: a sum over the rows, accumulated per thread
                                *ops.bias_gelu_backward(grad.view(-1, 8), x.view(-1, 8),
                                                        grad[:8], a),
                                *ops.geglu_backward(grad, x, grad.flip(0), a))
torch.save(out, sys.argv[1])
"""


def test_instruction_sets_agree_bitwise(tmp_path):
    results = {}
    for isa in ISAS:
        if not cpu_supports(isa):
            continue
        path = tmp_path / f"{isa}.pt"
        env = dict(os.environ, GELU_EXT_CPU_ISA=isa)
        subprocess.run([sys.executable, "-c", CHILD, str(path)], env=env, check=True, timeout=600)
        results[isa] = torch.load(path, weights_only=False)
        assert results[isa]["isa"] == isa
    if len(results) < 2:
        pytest.skip("this CPU runs only one of the kernel variants")
    reference_isa, reference = next(iter(results.items()))
    for isa, other in results.items():
        for key, tensors in reference.items():
            if key == "isa":
                continue
            for a, b in zip(tensors, other[key]):
                nan = a.isnan() & b.isnan()  # NaN's sign and payload carry no meaning
                same = nan | ((a == b) & (torch.signbit(a) == torch.signbit(b)))
                assert same.all(), (f"{isa} differs from {reference_isa} for {key}: "
                                    f"{a[~same][:4].tolist()} vs {b[~same][:4].tolist()}")


# 16-bit gelu, gelu_backward and geglu look f and f' up in tables that the kernels build on first
# use. Here that first use comes from several threads at once, on every 16-bit input.
FIRST_USE = r"""
import sys, torch, gelu_ext
ops = torch.ops.gelu_ext
torch.set_num_threads(4)
every16 = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16)
out = {}
for dtype in (torch.float16, torch.bfloat16):
    x = every16.view(dtype).repeat(16)  # long enough for every thread to take a share
    c = torch.full_like(x, 0.75)  # no overflow, and the products still round
    for a in ("none", "tanh", "sigmoid"):
        results = (ops.gelu(x, a), ops.gelu_backward(c, x, a), ops.geglu(x, c, a),
                   *ops.geglu_backward(c, x, c, a))
        out[(str(dtype), a)] = [r[:1 << 16] for r in results]
torch.save(out, sys.argv[1])
"""


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_16_bit_tables_built_by_many_threads_at_once(tmp_path, dtype):
    path = tmp_path / "first_use.pt"
    subprocess.run([sys.executable, "-c", FIRST_USE, str(path)], check=True, timeout=600)
    results = torch.load(path, weights_only=False)
    x = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(dtype)
    # Tiny inputs, where f rounds ties its own way, have tests of their own (test_forward.py).
    kept = x.isfinite() & (x.double().abs() >= TINY_INPUT)
    for a in ("none", "tanh", "sigmoid"):
        y, dy, geglu, geglu_dgate, geglu_dup = (t[kept] for t in results[(str(dtype), a)])
        f, d1, _ = torch_reference(x[kept], a)
        scale, _ = derivative_scales(x[kept], a)
        z = x[kept].double()
        for got, c in ((y, 1.0), (geglu, 0.75), (geglu_dup, 0.75)):
            assert_ulps(got, c * f, CORRECTLY_ROUNDED, f"{dtype} {a} {c} f", z,
                        mp_exact(z, a, 0, torch.tensor(c)))
        # c f'(x); where f' crosses zero, the reference is judged against its larger term
        for got, c in ((dy, 0.75), (geglu_dgate, 0.5625)):
            assert_within(got, c * d1, c * scale, CORRECTLY_ROUNDED, dtype, f"{dtype} {a} {c} f'",
                          z, mp_exact(z, a, 1, torch.tensor(c)))
