"""The AVX-512 CPU kernels (csrc/cpu/kernels_avx512.cpp), run on a CPU without AVX-512.

Most x86 servers run the AVX-512 kernels, and test_cpu_kernels.py checks them against the others
only where the CPU has AVX-512. Here the same source is built with its intrinsics taken from
tests/avx512_emulation/avx512_stand_in.h (portable C++, lane by lane) and its target pragma
rewritten for AVX2, and its results must equal the CPU ops' bit for bit (whichever kernels this
CPU runs: all of them agree bit for bit, test_cpu_kernels.py), on every pass, dtype, variant and
every 16-bit input, through the contiguous, gathered and 2-D paths of loops.h, with the redo queue
and the 16-bit tables, and the bias gradient's column sums. The stand-in's reciprocal estimate is
not the hardware's (see its header): the kernels must not depend on its bits.
"""

import ctypes
import platform
import shutil
from pathlib import Path

import pytest
import torch
from conftest import (FLOAT_DTYPES, HALF_DTYPES, all_values, assert_same_bits, binade_samples,
                      cpu_supports)
from kernel_passes import (DTYPE_CODES, NUM_OUTPUTS, PASSES, VARIANT_CODES, make_inputs,
                           pointers)
from native_build import cached_library

ROOT = Path(__file__).resolve().parent.parent
CXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(
    CXX is None or platform.machine() not in ("x86_64", "AMD64") or
    not cpu_supports("avx2"),
    reason="needs g++ and an x86-64 CPU with AVX2, FMA and F16C (the stand-in keeps those native)")

ops = torch.ops.gelu_ext
TARGET_AVX512 = '#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,f16c")'
TARGET_HOST = '#pragma GCC target("avx2,fma,f16c")'


def build_inputs():
    """The files the build reads."""
    return [*(ROOT / "csrc").rglob("*.h"), *(ROOT / "csrc" / "cpu").glob("*"),
            *(ROOT / "tests" / "avx512_emulation").glob("*")]


def emulated_library(wait=True):
    """The AVX-512 kernels built for the host with the stand-in (wait=False: only start)."""
    source = (ROOT / "csrc" / "cpu" / "kernels_avx512.cpp").read_text()
    assert source.count(TARGET_AVX512) == 1, (
        "kernels_avx512.cpp no longer has the target pragma this test rewrites: update "
        "TARGET_AVX512")
    # -O1: a quarter of -O3's build time, for kernels run on a few hundred thousand elements.
    flags = ["-std=c++17", "-O1", "-shared", "-fPIC", "-mavx2", "-mfma", "-mf16c",
             "-ffp-contract=off", "-fno-math-errno", "-Wno-psabi",
             "-include", str(ROOT / "tests" / "avx512_emulation" / "avx512_stand_in.h"),
             "-I", str(ROOT / "csrc" / "cpu")]
    copy = "kernels_avx512_host.cpp"
    return cached_library(
        "avx512_emulation", CXX, flags, build_inputs(),
        {copy: source.replace(TARGET_AVX512, TARGET_HOST)},
        lambda folder: [f'-DGELU_AVX512_SOURCE="{folder / copy}"',
                        str(ROOT / "tests" / "avx512_emulation" / "driver.cpp"),
                        "-o", str(folder / "library.so")],
        "the emulated AVX-512 kernels", wait)


def start_native_builds(fixtures):
    """Called by conftest.py as the run begins, with the fixtures the selected tests use."""
    if "emulated" in fixtures:
        emulated_library(wait=False)


@pytest.fixture(scope="module")
def emulated():
    lib = emulated_library()
    i64, pointer = ctypes.c_int64, ctypes.c_void_p
    lib.emulated_run_loop.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                      ctypes.POINTER(pointer), ctypes.POINTER(i64), i64, i64]
    lib.emulated_add_to_column_sums.argtypes = [ctypes.c_int, pointer, i64, i64, i64, i64, i64,
                                                pointer, pointer]
    return lib


def run_loop(lib, pass_name, approximate, operands, size0, size1, strides):
    """loops.h's run_loop on operands (outputs first) with TensorIterator's strides: size0
    elements of byte strides strides[0][k], size1 times with strides[1][k]."""
    flat = [s for level in strides for s in level]
    lib.emulated_run_loop(PASSES[pass_name][0], VARIANT_CODES[approximate],
                          DTYPE_CODES[operands[-1].dtype], pointers(operands),
                          (ctypes.c_int64 * len(flat))(*flat), size0, size1)


def pass_inputs(pass_name, dtype):
    """The pass's inputs, 1-D: for float32 and float64 the kernels' special values and random
    ones, plus samples of every binade as the GELU argument; for 16-bit data every bit pattern
    as the GELU argument, and random values for the other operands."""
    roles = PASSES[pass_name][1]
    if dtype in HALF_DTYPES:
        n = 1 << 16
        inputs = make_inputs(roles, n, dtype)
        return [all_values(dtype) if role == "x" else t for role, t in zip(roles, inputs)]
    samples = binade_samples(dtype, per_binade=4)
    n = 4099 + samples.numel()  # 4099: the last vector is partial
    inputs = make_inputs(roles, n, dtype)
    return [torch.cat([t[:4099], samples]) if role == "x" else t
            for role, t in zip(roles, inputs)]


def expected(pass_name, approximate, inputs):
    return PASSES[pass_name][2]([t.contiguous() for t in inputs], approximate)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("pass_name", PASSES)
def test_contiguous_agrees_bitwise(emulated, pass_name, dtype, approximate):
    inputs = pass_inputs(pass_name, dtype)
    n = inputs[0].numel()
    outputs = [torch.full((n,), float("nan"), dtype=dtype)
               for _ in range(NUM_OUTPUTS.get(pass_name, 1))]
    size = inputs[0].element_size()
    run_loop(emulated, pass_name, approximate, outputs + inputs, n, 1,
             [[size] * (len(outputs) + len(inputs)), [0] * (len(outputs) + len(inputs))])
    for k, (got, want) in enumerate(zip(outputs, expected(pass_name, approximate, inputs))):
        assert_same_bits(got, want, f"{pass_name} output {k}, {dtype}, {approximate}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("pass_name", PASSES)
def test_strided_blocks_agree_bitwise(emulated, pass_name, dtype):
    """A 2-D block whose inner stride is not the element size (loops.h gathers such operands
    into buffers of 256), with outputs every other element of their rows and a broadcast last
    input (stride 0 across the rows)."""
    rows, cols = 3, 300
    inputs = [t.reshape(rows, cols) for t in make_inputs(PASSES[pass_name][1], rows * cols, dtype)]
    inputs = ([torch.cat([t, t], dim=1)[:, ::2] for t in inputs[:-1]] +
              [inputs[-1][:1].expand(rows, cols)])
    wide = [torch.full((rows, 2 * cols), float("nan"), dtype=dtype)
            for _ in range(NUM_OUTPUTS.get(pass_name, 1))]
    outputs = [w[:, ::2] for w in wide]
    operands = outputs + inputs
    size = inputs[0].element_size()
    run_loop(emulated, pass_name, "none", operands, cols, rows,
             [[t.stride(1) * size for t in operands], [t.stride(0) * size for t in operands]])
    for k, (got, want) in enumerate(zip(outputs, expected(pass_name, "none", inputs))):
        assert_same_bits(got, want, f"{pass_name} output {k}, {dtype}, strided")
        assert wide[k][:, 1::2].isnan().all(), f"{pass_name}: a write between the outputs"


def round_column_sum(hi, lo, dtype):
    """ops.cpp's rounding of one thread's column sums: hi + lo rounded once to dtype (through a
    float rounded to odd for 16-bit types)."""
    value = hi + lo
    if dtype == torch.float64:
        return value
    if dtype == torch.float32:
        return value.float()
    toward_zero = value.float()
    toward_zero = torch.where(toward_zero.double().abs() > value.abs(),
                              torch.nextafter(toward_zero, torch.zeros_like(toward_zero)), toward_zero)
    odd = toward_zero.view(torch.int32) | (toward_zero.double() != value).int()
    return odd.view(torch.float32).to(dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_bias_gradient_column_sums(emulated, dtype):
    """The bias gradient's sums, accumulated row by row (33 columns: whole vectors and a rest),
    equal the op's on one thread; and summed in one call over every row, or down one column at
    a time (column_step 0), they give the same sums."""
    rows, cols = 200, 33
    grad, x, bias = make_inputs(["grad", "x", "bias"], rows * cols, dtype)
    grad, x, bias = grad.view(rows, cols), x.view(rows, cols), bias[:cols]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        grad_input, grad_bias = ops.bias_gelu_backward(grad, x, bias, "none")
    finally:
        torch.set_num_threads(threads)
    size = grad_input.element_size()
    by_rows = [torch.zeros(cols, dtype=torch.float64) for _ in range(2)]
    for r in range(rows):
        emulated.emulated_add_to_column_sums(DTYPE_CODES[dtype], grad_input[r].data_ptr(), size,
                                             cols, 1, 0, 1, *[t.data_ptr() for t in by_rows])
    assert_same_bits(round_column_sum(*by_rows, dtype), grad_bias, f"grad_bias, {dtype}")
    at_once = [torch.zeros(cols, dtype=torch.float64) for _ in range(2)]
    emulated.emulated_add_to_column_sums(DTYPE_CODES[dtype], grad_input.data_ptr(), size, cols,
                                         rows, cols * size, 1, *[t.data_ptr() for t in at_once])
    down = [torch.zeros(cols, dtype=torch.float64) for _ in range(2)]
    for c in range(cols):
        emulated.emulated_add_to_column_sums(DTYPE_CODES[dtype], grad_input[:, c].data_ptr(),
                                             cols * size, rows, 1, 0, 0,
                                             *[t[c:].data_ptr() for t in down])
    for sums, how in [(at_once, "every row in one call"), (down, "down the columns")]:
        for got, want in zip(sums, by_rows):
            assert_same_bits(got, want, f"sums {how}, {dtype}")
