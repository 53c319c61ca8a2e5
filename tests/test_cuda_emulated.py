"""The CUDA kernels and launchers of csrc/cuda/gelu_cuda.cu, run on the CPU.

gelu_cuda.cu includes no torch, and its kernels use no shared memory or synchronization, so the
file also builds as host C++ against the small stand-in for the CUDA runtime in
tests/cuda_emulation/include, with each launch rewritten as a loop over blocks and threads. That
runs every kernel's indexing, vector loads and stores, tails, strided offsets and dispatch where
no GPU is visible, and checks them against the CPU kernels, element by element. (On the GPU the
narrow path takes the hardware's exp2 and reciprocal; here their portable forms. test_cuda.py
covers the real device.)
"""

import ctypes
import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from conftest import (FIRST_DERIVATIVE_ULPS, FLOAT_DTYPES, FORWARD_ULPS, HALF_DTYPES, all_values,
                      assert_ulps, assert_within, binade_samples)
from kernel_passes import (DTYPE_CODES, NUM_OUTPUTS, PASSES, VARIANT_CODES, gelu_arguments,
                           make_inputs, pointers)

from gelu_ext.reference import derivative_scales, torch_reference, ulp

ROOT = Path(__file__).resolve().parent.parent
CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(
    CXX is None or platform.machine() not in ("x86_64", "AMD64"),
    reason="needs a C++ compiler and an x86-64 CPU (the stand-in converts float16 with F16C)")

ops = torch.ops.gelu_ext
LAUNCH = re.compile(r"([A-Za-z_]\w*<[^<>;]*>)<<<(.*?),\s*(\w+),\s*0,\s*stream>>>\((.*?)\);", re.S)


def host_copy_of_cuda_source():
    """gelu_cuda.cu with each `kernel<<<grid, block, 0, stream>>>(args);` turned into
    `gelu_emulation::launch(grid, block, [&] { kernel(args); });`."""
    source = (ROOT / "csrc" / "cuda" / "gelu_cuda.cu").read_text()
    rewritten, count = LAUNCH.subn(
        lambda m: f"gelu_emulation::launch({m[2]}, {m[3]}, [&] {{ {m[1]}({m[4]}); }});", source)
    assert count == source.count("<<<") > 0, "a launch in gelu_cuda.cu no longer has the form " \
        "this test rewrites: update LAUNCH"
    return rewritten


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    build = tmp_path_factory.mktemp("cuda_emulation")
    source = build / "gelu_cuda_host.cu"
    source.write_text(host_copy_of_cuda_source())
    library = build / "emulated.so"
    # -I csrc/cuda: the copy's relative includes ("../gelu_math.h") resolve from there.
    # GELU_TAIL_F64_BY_HORNER: the float64 tail factor as the GPU evaluates it (gelu_math.h).
    command = [CXX, "-std=c++17", "-O1", "-shared", "-fPIC", "-mf16c", "-ffp-contract=off",
               "-fno-math-errno", "-Wno-unknown-pragmas", "-DGELU_TAIL_F64_BY_HORNER",
               "-I", str(ROOT / "tests" / "cuda_emulation" / "include"),
               "-I", str(ROOT / "csrc" / "cuda"), f'-DGELU_CUDA_SOURCE="{source}"',
               str(ROOT / "tests" / "cuda_emulation" / "driver.cpp"), "-o", str(library)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, f"building the emulated CUDA kernels failed:\n{result.stderr}"
    return ctypes.CDLL(str(library))


def assert_agree(emulated_out, cpu_out, scale, what):
    """16-bit results are correctly rounded on both backends, and float32 results come from the
    same double-path operations on both, so all of them are equal. float64 results (the CPU's
    single path for the gated forms, double-double on the GPU) are each within 0.56 ulp of the
    exact value in ulps of max(|result|, scale), so they differ by under 2."""
    same = (emulated_out == cpu_out) | (emulated_out.isnan() & cpu_out.isnan())
    if same.all():
        return
    first = int((~same).flatten().nonzero()[0])
    assert emulated_out.dtype == torch.float64, (
        f"{what}: {int((~same).sum())} of {same.numel()} results differ from the CPU kernels, "
        f"first at index {first}: {emulated_out.flatten()[first].item()!r} against "
        f"{cpu_out.flatten()[first].item()!r}")
    magnitude = torch.maximum(cpu_out.double().abs(), torch.as_tensor(scale, dtype=torch.float64))
    err = (emulated_out.double() - cpu_out.double()).abs() / ulp(magnitude, cpu_out.dtype)
    err = torch.where(same, torch.zeros_like(err), err)  # inf == inf, and NaN against NaN
    worst = int(err.flatten().argmax())
    assert err.flatten()[worst] <= 2, (
        f"{what}: {emulated_out.flatten()[worst].item()!r} against the CPU kernels' "
        f"{cpu_out.flatten()[worst].item()!r} at index {worst}: {err.flatten()[worst]:.2f} ulps")


class GuardedOutput:
    """A NaN-filled output [rows, cols] (or [n]) inside a larger buffer: 64 bytes of margin on
    each side and, if spread, an unused column after each of its own. A kernel writing outside
    its output would leave numbers in that space (only NaN inputs give NaN results)."""

    MARGIN_BYTES = 64

    def __init__(self, shape, dtype, spread=False):
        margin = self.MARGIN_BYTES // torch.empty(0, dtype=dtype).element_size()
        rows, cols = (1, shape[0]) if len(shape) == 1 else shape
        width = 2 * cols if spread else cols
        self.buffer = torch.full((2 * margin + rows * width,), float("nan"), dtype=dtype)
        self.outside = torch.ones_like(self.buffer, dtype=torch.bool)
        inner = self.buffer[margin:margin + rows * width].view(rows, width)
        inner_outside = self.outside[margin:margin + rows * width].view(rows, width)
        if spread:
            self.view = inner[:, ::2]
            inner_outside[:, ::2] = False
        else:
            self.view = inner.view(shape)
            inner_outside[:] = False

    def assert_untouched_outside(self, what):
        stray = ~self.buffer[self.outside].isnan()
        assert not stray.any(), f"{what}: {int(stray.sum())} writes outside the output"


def launch_contiguous(lib, pass_name, approximate, outputs, inputs):
    code = PASSES[pass_name][0]
    status = lib.emulated_launch_contiguous(
        code, VARIANT_CODES[approximate], DTYPE_CODES[inputs[0].dtype],
        pointers(outputs + inputs), ctypes.c_int64(inputs[0].numel()))
    assert status == 0


def launch_strided(lib, pass_name, approximate, outputs, inputs):
    """Operands of one shape and any strides, dimension 0 fastest as TensorIterator gives them."""
    operands = outputs + inputs
    shape = list(reversed(operands[0].shape))
    sizes = (ctypes.c_int32 * len(shape))(*shape)
    strides = [s * t.element_size() for t in operands for s in reversed(t.stride())]
    status = lib.emulated_launch_strided(
        PASSES[pass_name][0], VARIANT_CODES[approximate], DTYPE_CODES[inputs[0].dtype],
        pointers(operands), len(shape), sizes, (ctypes.c_int32 * len(strides))(*strides))
    assert status == 0


def check_pass(launch, lib, pass_name, approximate, inputs, shape, what, spread_outputs=False):
    """Runs a pass through `launch` into NaN-filled guarded outputs of `shape`, and checks each
    output against the CPU op (on contiguous copies of the inputs) and its guard space."""
    _, _, cpu_op, scales = PASSES[pass_name]
    guarded = [GuardedOutput(shape, inputs[0].dtype, spread_outputs)
               for _ in range(NUM_OUTPUTS.get(pass_name, 1))]
    launch(lib, pass_name, approximate, [g.view for g in guarded], inputs)
    expected = cpu_op([t.contiguous() for t in inputs], approximate)
    wide = [t.double() for t in inputs]
    for k, (output, want, scale) in enumerate(zip(guarded, expected, scales(wide, approximate))):
        where = f"{pass_name} output {k}, {inputs[0].dtype}, {what}"
        assert_agree(output.view, want, scale, where)
        output.assert_untouched_outside(where)


@pytest.mark.parametrize("n", [1, 3, 9, 4099])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("pass_name", PASSES)
def test_contiguous_kernel_agrees_with_cpu(emulated, pass_name, dtype, approximate, n):
    """16-byte vectors, a grid-stride loop of several rounds, and a tail of n % (16 / element
    size) elements."""
    inputs = make_inputs(PASSES[pass_name][1], n, dtype)
    check_pass(launch_contiguous, emulated, pass_name, approximate, inputs, (n,), f"n={n}")


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_every_16bit_input_forward_and_backward(emulated, dtype, approximate):
    """The narrow path and its double-path fallback for every 16-bit input."""
    x = all_values(dtype)
    grad = torch.ones_like(x)
    for pass_name, inputs, expected in [
        ("forward", [x], ops.gelu(x, approximate)),
        ("backward", [grad, x], ops.gelu_backward(grad, x, approximate)),
    ]:
        out = torch.full_like(x, float("nan"))
        launch_contiguous(emulated, pass_name, approximate, [out], inputs)
        assert_agree(out, expected, 0, f"{pass_name}, {dtype}")


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_bias_sums_that_float_cannot_hold(emulated, dtype, approximate):
    """16-bit x + b whose float sum is inexact (b 17 or more binades below x) go to the double
    path, as on the CPU: for x in (-8, -4] the lost bits decide some 16-bit roundings."""
    every = all_values(dtype).double()
    x = every[(every <= -4) & (every > -8)]
    b = every[(every.abs() >= 2.0**-20) & (every.abs() < 2.0**-11)]
    x, b = x.repeat_interleave(len(b)), b.repeat(len(x))
    inexact = (x.float() + b.float()).double() != x + b
    x, b = x[inexact].to(dtype), b[inexact].to(dtype)
    grad = torch.ones_like(x)
    for pass_name, inputs in [("bias_forward", [x, b]), ("bias_backward", [grad, x, b])]:
        check_pass(launch_contiguous, emulated, pass_name, approximate, inputs, x.shape,
                   f"{len(x)} inexact sums")


@pytest.mark.parametrize("dtype", [torch.float32, *HALF_DTYPES])
def test_results_within_bounds_of_the_exact_values(emulated, dtype, approximate):
    """Against the float64 reference, not the CPU kernels: f and f' (the backward with grad 1)
    within the bounds the tests of every device use. On the GPU float32 takes the double path,
    which measures 0.502 ulp; 16-bit results are correctly rounded."""
    if dtype in HALF_DTYPES:
        x = all_values(dtype)
    else:
        x = torch.cat([binade_samples(dtype, per_binade=16), torch.linspace(-10, 10, 20001),
                       torch.linspace(-70, -5, 2001)])
    x = x[x.isfinite()]
    f, d1, _ = torch_reference(x, approximate)
    y = torch.full_like(x, float("nan"))
    launch_contiguous(emulated, "forward", approximate, [y], [x])
    assert_ulps(y, f, FORWARD_ULPS[dtype], f"forward {dtype} {approximate}", x)
    dx = torch.full_like(x, float("nan"))
    launch_contiguous(emulated, "backward", approximate, [dx], [torch.ones_like(x), x])
    assert_within(dx, d1, derivative_scales(x, approximate)[0], FIRST_DERIVATIVE_ULPS[dtype],
                  dtype, f"backward {dtype} {approximate}", x)


def strided_layouts(rows, cols, dtype, roles, seed=0):
    """Operands as the CUDA ops meet them, each [rows, cols] with its own strides, and whether
    the outputs are every other column of a wider tensor:
    - "transposed": inputs that are transposes of contiguous tensors;
    - "broadcast": a bias (or the last input) of stride 0 over the rows;
    - "halves": inputs that are slices of one [rows, k cols] tensor (geglu's chunk);
    - "spread outputs": contiguous inputs, outputs with a column stride of 2."""
    n = rows * cols
    values = [v.reshape(rows, cols) for v in make_inputs(roles, n, dtype, seed)]
    yield "transposed", [v.t().contiguous().t() for v in values], False
    yield "broadcast", [v[:1].expand(rows, cols) if role == "bias" or k == len(roles) - 1 else v
                        for k, (v, role) in enumerate(zip(values, roles))], False
    packed = torch.cat(values + values, dim=1)
    yield "halves", [packed[:, k * cols:(k + 1) * cols] for k in range(len(values))], False
    yield "spread outputs", values, True


@pytest.mark.parametrize("cols", [29, 32])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("pass_name", PASSES)
def test_strided_kernels_agree_with_cpu(emulated, pass_name, dtype, approximate, cols):
    """29 columns: the strided kernel, an element per thread. 32 columns: where every operand's
    rows are contiguous and 16-byte aligned (broadcast, halves), the rows kernel, a vector per
    thread; elsewhere the strided kernel."""
    rows = 37
    for layout, inputs, spread_outputs in strided_layouts(rows, cols, dtype,
                                                          PASSES[pass_name][1]):
        check_pass(launch_strided, emulated, pass_name, approximate, inputs, (rows, cols),
                   f"{layout} layout", spread_outputs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("pass_name", ["bias_forward", "geglu_backward"])
def test_rows_kernel_grid_stride(emulated, pass_name, dtype):
    """More vectors (200 rows of 24) than the emulated grid has threads (2 multiprocessors x 8
    blocks x 256), so threads step on to later rows, and 24 does not divide that step, so their
    columns wrap."""
    rows, cols = 200, 24 * (16 // torch.empty(0, dtype=dtype).element_size())
    assert rows * 24 > 2 * 8 * 256 and (2 * 8 * 256) % 24 != 0
    for layout, inputs, _ in strided_layouts(rows, cols, dtype, PASSES[pass_name][1]):
        if layout in ("broadcast", "halves"):
            check_pass(launch_strided, emulated, pass_name, "none", inputs, (rows, cols),
                       f"{layout} layout")


def test_rows_of_vectors_need_aligned_rows(emulated):
    """Rows whose starts are not all 16-byte aligned take the strided kernel: a row stride of 36
    bytes, or an input starting 4 bytes past an aligned address."""
    base = gelu_arguments(37 * 9 + 1, torch.float32, seed=5)
    for what, x in [("row stride 36 bytes", base[:37 * 9].view(37, 9)[:, :8]),
                    ("start 4 bytes off", base[1:1 + 37 * 8].view(37, 8))]:
        out = torch.full((37, 8), float("nan"))
        launch_strided(emulated, "forward", "none", [out], [x])
        assert_agree(out, ops.gelu(x.contiguous(), "none"), 0, f"forward, {what}")


def test_three_dimensional_strided_layout(emulated):
    """More dimensions than two: a permuted [4, 5, 6] input, each offset from its own index."""
    x = gelu_arguments(120, torch.float32, seed=3).reshape(4, 5, 6).permute(2, 0, 1)
    out = torch.full(x.shape, float("nan"), dtype=torch.float32)
    launch_strided(emulated, "forward", "none", [out], [x])
    assert_agree(out, ops.gelu(x.contiguous(), "none"), 0, "forward, permuted 3-D")


def test_empty_launches_do_nothing(emulated):
    out = torch.full((4,), 7.0)
    x = torch.zeros(4)
    assert emulated.emulated_launch_contiguous(0, 0, 0, pointers([out, x]), ctypes.c_int64(0)) == 0
    zero = (ctypes.c_int32 * 2)(0, 4)
    strides = (ctypes.c_int32 * 4)(4, 16, 4, 16)
    assert emulated.emulated_launch_strided(0, 0, 0, pointers([out, x]), 2, zero, strides) == 0
    assert torch.equal(out, torch.full((4,), 7.0))
