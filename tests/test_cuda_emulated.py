"""The CUDA kernels and launchers of csrc/cuda/gelu_cuda.cu, run on the CPU.

gelu_cuda.cu includes no torch, so the file also builds as host C++ against the small stand-in
for the CUDA runtime in tests/cuda_emulation/include, with each launch rewritten as a loop over
blocks and their warps, each warp's lanes as fibers that wait for one another at every warp
collective (a collective not every lane reaches fails the launch). That runs every kernel's
indexing, vector loads and stores, tails, strided offsets, deferred fallback and dispatch where
no GPU is visible, and checks them against the CPU kernels, element by element. The build has
the math's device forms (GELU_DEVICE_FORMS), so it runs the arithmetic the GPU runs, except for
the GPU's approximate exp2 and reciprocal, whose bits no CPU reproduces: their stand-ins err by the
maximum the PTX ISA documents, up or down by a hash of the input (math/gpu_approximate.h). The
16-bit results must still be correctly rounded, so these tests fail if the narrow path's error
bound does not cover those instructions' errors. (test_cuda.py covers the real device.)
"""

import ctypes
import platform
import re
import shutil
from pathlib import Path

import pytest
import torch
from conftest import (FIRST_DERIVATIVE_ULPS, FLOAT_DTYPES, FLOAT_PATH_ULPS, FORWARD_ULPS, HALF_DTYPES,
                      MIXED_PATH_ULPS, SECOND_DERIVATIVE_ULPS, TINY_INPUT, MpValues, all_values,
                      assert_devices_agree, assert_ulps, assert_within, binade_samples, mp_exact,
                      single_path_edges_f64)
from kernel_passes import (DTYPE_CODES, NUM_OUTPUTS, PASSES, VARIANT_CODES, gelu_arguments,
                           make_inputs, pointers)
from native_build import cached_library

from gelu_ext.reference import derivative_scales, reference_and_scales, same_path_on_cpu_and_cuda

ROOT = Path(__file__).resolve().parent.parent
CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(
    CXX is None or platform.machine() not in ("x86_64", "AMD64"),
    reason="needs a C++ compiler and an x86-64 CPU (the stand-in converts float16 with F16C)")

ops = torch.ops.gelu_ext
LAUNCH = re.compile(r"([A-Za-z_]\w*<[^<>;]*>)<<<(.*?),\s*(\w+),\s*0,\s*stream>>>\((.*?)\);", re.S)
# The emulated device (tests/cuda_emulation/include/host_cuda.h): one multiprocessor, so at most
# 8 blocks of 256 threads, and a grid-stride loop over more work items than that runs rounds.
THREADS = 8 * 256
FLAGS = ["-std=c++17", "-O1", "-shared", "-fPIC", "-mf16c", "-ffp-contract=off",
         "-fno-math-errno", "-Wno-unknown-pragmas",
         # The math in the forms the GPU computes (math/common.h), its approximate instructions
         # replaced by stand-ins that err by their documented maximum (math/gpu_approximate.h).
         "-DGELU_DEVICE_FORMS",
         "-I", str(ROOT / "tests" / "cuda_emulation" / "include"),
         # The copy's relative includes ("../gelu_math.h") resolve from csrc/cuda.
         "-I", str(ROOT / "csrc" / "cuda")]


def host_copy_of_cuda_source():
    """gelu_cuda.cu with each `kernel<<<grid, block, 0, stream>>>(args);` turned into
    `gelu_emulation::launch("kernel", grid, block, stream, [&] { kernel(args); });`."""
    source = (ROOT / "csrc" / "cuda" / "gelu_cuda.cu").read_text()
    rewritten, count = LAUNCH.subn(
        lambda m: f'gelu_emulation::launch("{m[1]}", {m[2]}, {m[3]}, stream, [&] {{ {m[1]}({m[4]}); }});',
        source)
    assert count == source.count("<<<") > 0, "a launch in gelu_cuda.cu no longer has the form " \
        "this test rewrites: update LAUNCH"
    return rewritten


def build_inputs():
    """The files the build reads: every header under csrc/, csrc/cuda/, the stand-in and the
    driver."""
    return sorted({*(ROOT / "csrc").rglob("*.h"), *(ROOT / "csrc" / "cuda").glob("*"),
                   *(ROOT / "tests" / "cuda_emulation").rglob("*.*")})


def emulated_build(arch, wait=True):
    """The kernels with the routes of compute capability arch (900 for 9.0) in
    csrc/math/route.h (wait=False: only start building them)."""
    copy = "gelu_cuda_host.cu"
    lib = cached_library(
        f"cuda_emulation_sm{arch // 10}", CXX, FLAGS + [f"-DGELU_EMULATED_CUDA_ARCH={arch}"],
        build_inputs(), {copy: host_copy_of_cuda_source()},
        lambda folder: [f'-DGELU_CUDA_SOURCE="{folder / copy}"',
                        str(ROOT / "tests" / "cuda_emulation" / "driver.cpp"),
                        "-o", str(folder / "library.so")],
        f"the emulated CUDA kernels (sm_{arch // 10})", wait)
    if not wait:
        return None
    lib.emulated_take_launches.restype = ctypes.c_int64
    lib.emulated_caller_stream.restype = ctypes.c_uint64
    take_launches(lib)  # an empty log for each module's first test
    return lib


def start_native_builds(fixtures):
    """Called by conftest.py as the run begins, with the fixtures the selected tests use."""
    for fixture, archs in (("emulated", [1000]), ("emulated_float_path", [860]),
                           ("emulated_float32_route", [860, 800])):
        if fixture in fixtures:
            for arch in archs:
                emulated_build(arch, wait=False)


@pytest.fixture(scope="module")
def emulated():
    """A B200's routes: float32 on the double path, 16-bit elements in packed pairs (whole
    vectors; single elements at the tails)."""
    return emulated_build(1000)


def same_bits_as_cpu(dtype, approximate):
    """Whether the emulated B200 kernels compute dtype's results by the CPU's operations."""
    return same_path_on_cpu_and_cuda(dtype, approximate, capability=(10, 0))


@pytest.fixture(scope="module")
def emulated_float_path():
    """An RTX 30/A10's routes (8.6, FP64 at 1/64): float32 on the float path (f32_via_f32)."""
    return emulated_build(860)


# The float32 routes other than the CPU's: 8.6's float path, and 8.0's (A100) mixed form of the
# double path, with their bounds over every float32 input (docs/accuracy.md).
FLOAT32_ROUTES = {860: ("float path", FLOAT_PATH_ULPS), 800: ("mixed form", MIXED_PATH_ULPS)}


@pytest.fixture(scope="module", params=sorted(FLOAT32_ROUTES), ids=lambda arch: f"sm_{arch // 10}")
def emulated_float32_route(request):
    """(the kernels, the route's name, its bounds) for each float32 route of FLOAT32_ROUTES."""
    return (emulated_build(request.param), *FLOAT32_ROUTES[request.param])


@pytest.fixture(autouse=True)
def fresh_launch_log(emulated):
    """An empty launch log for each test, and afterwards a check of the stream of every launch
    it made (take_launches)."""
    take_launches(emulated)
    yield
    take_launches(emulated)


def take_launches(lib):
    """The launches since the last call: (kernel as the source names it, grid, block) each.
    Every one must have been launched on the stream the launchers were given (the current
    stream, in cuda/ops_cuda.cpp)."""
    size = lib.emulated_take_launches(None, ctypes.c_int64(0))
    text = ctypes.create_string_buffer(size)
    lib.emulated_take_launches(text, ctypes.c_int64(size))
    launches = [line.rsplit(" ", 3) for line in text.value.decode().splitlines()]
    caller = lib.emulated_caller_stream()
    for kernel, _, _, stream in launches:
        assert int(stream) == caller, (
            f"{kernel} launched on stream {int(stream):#x}, not on the one it was given "
            f"({caller:#x})")
    return [(kernel, int(grid), int(block)) for kernel, grid, block, _ in launches]


def rounds(launch, work_items):
    """Rounds of a launch's grid-stride loop over work_items."""
    _, grid, block = launch
    return -(-work_items // (grid * block))


def vector_width(dtype):
    return 16 // torch.empty(0, dtype=dtype).element_size()


def lane_vectors(dtype, pass_name):
    """16-byte vectors per lane and round: two on the narrow path (16-bit data, every pass but
    the double backward: gelu_cuda.cu's kPairedVectors; the rows kernel takes them in two rows),
    else one."""
    return 2 if dtype in HALF_DTYPES and pass_name != "double_backward" else 1


def lane_elements(dtype, pass_name):
    """Elements per lane and round of the contiguous kernel."""
    return vector_width(dtype) * lane_vectors(dtype, pass_name)


class GuardedOutput:
    """A NaN-filled output [rows, cols] (or [n]) inside a larger buffer: 64 bytes of margin on
    each side and, if spread, an unused column after each of its own. A kernel writing outside
    its output would leave numbers in that space (only NaN inputs give NaN results)."""

    MARGIN_BYTES = 64

    def __init__(self, shape, dtype, spread=False, offset=0):
        """offset: elements by which the output starts after a 64-byte boundary."""
        margin = self.MARGIN_BYTES // torch.empty(0, dtype=dtype).element_size()
        rows, cols = (1, shape[0]) if len(shape) == 1 else shape
        width = 2 * cols if spread else cols
        self.buffer = torch.full((2 * margin + offset + rows * width,), float("nan"), dtype=dtype)
        self.outside = torch.ones_like(self.buffer, dtype=torch.bool)
        start = margin + offset
        inner = self.buffer[start:start + rows * width].view(rows, width)
        inner_outside = self.outside[start:start + rows * width].view(rows, width)
        if spread:
            self.view = inner[:, ::2]
            inner_outside[:, ::2] = False
        else:
            self.view = inner.view(shape)
            inner_outside[:] = False

    def assert_untouched_outside(self, what):
        stray = ~self.buffer[self.outside].isnan()
        assert not stray.any(), f"{what}: {int(stray.sum())} writes outside the output"


def launch_contiguous(lib, pass_name, approximate, outputs, inputs, index_bits=32):
    code = PASSES[pass_name][0]
    status = lib.emulated_launch_contiguous(
        code, VARIANT_CODES[approximate], DTYPE_CODES[inputs[0].dtype],
        pointers(outputs + inputs), ctypes.c_int64(inputs[0].numel()), {32: 0, 64: 1}[index_bits])
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


def iteration(operands):
    """The operands' common shape and byte strides as TensorIterator hands them to
    cuda/ops_cuda.cpp: dimension 0 fastest, dimensions of one element dropped, and neighbours
    along which every operand is dense merged into one (at::TensorIterator coalesces them)."""
    dims = [(size, [t.stride(d) * t.element_size() for t in operands])
            for d, size in reversed(list(enumerate(operands[0].shape))) if size != 1]
    merged = []
    for size, strides in dims:
        if merged and all(s == merged[-1][0] * p for s, p in zip(strides, merged[-1][1])):
            merged[-1] = (merged[-1][0] * size, merged[-1][1])
        else:
            merged.append((size, strides))
    return [size for size, _ in merged], [[st[k] for _, st in merged] for k in range(len(operands))]


def launch_planned(lib, pass_name, approximate, outputs, inputs, index_limit=2**31 - 1):
    """Through cuda/launch_plan.h, as cuda/ops_cuda.cpp launches a TensorIterator over these
    operands, with index_limit in place of INT32_MAX."""
    operands = outputs + inputs
    sizes, strides = iteration(operands)
    flat = [s for per_operand in strides for s in per_operand]
    status = lib.emulated_launch_iteration(
        PASSES[pass_name][0], VARIANT_CODES[approximate], DTYPE_CODES[inputs[0].dtype],
        pointers(operands), len(sizes), (ctypes.c_int64 * len(sizes))(*sizes),
        (ctypes.c_int64 * len(flat))(*flat), ctypes.c_int64(index_limit))
    assert status == 0


def check_pass(launch, lib, pass_name, approximate, inputs, shape, what, spread_outputs=False,
               output_offset=0):
    """Runs a pass through `launch` into NaN-filled guarded outputs of `shape`, and checks each
    output against the CPU op (on contiguous copies of the inputs) and its guard space."""
    _, _, cpu_op, scales = PASSES[pass_name]
    guarded = [GuardedOutput(shape, inputs[0].dtype, spread_outputs, output_offset)
               for _ in range(NUM_OUTPUTS.get(pass_name, 1))]
    launch(lib, pass_name, approximate, [g.view for g in guarded], inputs)
    expected = cpu_op([t.contiguous() for t in inputs], approximate)

    def scale(k):  # float64 only, where results differ
        return lambda: scales([t.double() for t in inputs], approximate)[k]

    for k, (output, want) in enumerate(zip(guarded, expected)):
        where = f"{pass_name} output {k}, {inputs[0].dtype}, {what}"
        assert_devices_agree(output.view, want, scale(k), where,
                             same_bits_as_cpu(inputs[0].dtype, approximate))
        output.assert_untouched_outside(where)


def rounds_of_contiguous(dtype, pass_name, rounds=3):
    """A length whose vectors take `rounds` rounds of the emulated grid, with a tail."""
    lane = lane_elements(dtype, pass_name)
    return ((rounds - 1) * THREADS + 100) * lane + vector_width(dtype) - 1


@pytest.mark.parametrize("n, index_bits", [(1, 32), (3, 32), (9, 64)])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("pass_name", PASSES)
def test_contiguous_kernel_agrees_with_cpu(emulated, pass_name, dtype, approximate, n, index_bits):
    """16-byte vectors and a tail of n % (16 / element size) elements, with each index width."""
    inputs = make_inputs(PASSES[pass_name][1], n, dtype)
    check_pass(lambda *args: launch_contiguous(*args, index_bits=index_bits), emulated,
               pass_name, approximate, inputs, (n,), f"n={n}, {index_bits}-bit index")
    (launch,) = take_launches(emulated)
    assert launch[0].startswith("contiguous_kernel<") and launch[0].endswith(f"int{index_bits}_t>")


@pytest.mark.parametrize("index_bits", [32, 64])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("pass_name", PASSES)
def test_contiguous_kernel_grid_stride(emulated, pass_name, dtype, index_bits):
    """More vectors than the emulated grid has threads: three rounds of the grid-stride loop,
    then the tail, with each index width (the loop's indexing depends on the pass's operands,
    the dtype's vector width and the index type, not on the form)."""
    n = rounds_of_contiguous(dtype, pass_name)
    inputs = make_inputs(PASSES[pass_name][1], n, dtype)
    check_pass(lambda *args: launch_contiguous(*args, index_bits=index_bits), emulated,
               pass_name, "none", inputs, (n,), f"n={n}, {index_bits}-bit index")
    (launch,) = take_launches(emulated)
    assert launch[0].endswith(f"int{index_bits}_t>")
    assert rounds(launch, n // lane_elements(dtype, pass_name)) == 3, launch


def test_grid_is_what_the_device_holds_at_once(emulated):
    """Each launch's grid is as many blocks as the current device holds at once: its SMs times
    the kernel's blocks per SM (cudaOccupancyMaxActiveBlocksPerMultiprocessor), asked per device
    and kernel. The emulated device 1 holds 3 blocks per SM where device 0 holds 8; a launch whose
    work needs fewer blocks gets fewer. The results agree with the CPU's on each."""
    n = rounds_of_contiguous(torch.float32, "forward")
    inputs = make_inputs(PASSES["forward"][1], n, torch.float32)
    small = make_inputs(PASSES["forward"][1], 300, torch.float32)  # 75 vectors: one block
    expected = []
    try:
        for device, grid in ((1, 3), (0, 8)):
            emulated.emulated_set_device(device)
            check_pass(launch_contiguous, emulated, "forward", "none", inputs, (n,),
                       f"device {device}")
            check_pass(launch_strided, emulated, "forward", "none", [inputs[0][:143 * 29].view(143, 29)],
                       (143, 29), f"device {device}, strided")
            check_pass(launch_contiguous, emulated, "forward", "none", small, (300,),
                       f"device {device}, 300 elements")
            expected += [("contiguous_kernel<", grid), ("strided_kernel<", grid),
                         ("contiguous_kernel<", 1)]
    finally:
        emulated.emulated_set_device(0)
    launches = take_launches(emulated)
    assert [(kernel[:kernel.index("<") + 1], grid) for kernel, grid, _ in launches] == expected


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
        assert_devices_agree(out, expected, 0, f"{pass_name}, {dtype}")


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_beyond_the_core_domain(emulated, dtype, approximate):
    """16-bit x beyond the narrow forms' core domain (|x| > 8), which the kernels' loop leaves to
    the rounding test alone for float16 in the forward and backward (narrow16.h,
    kBeyondCoreSettles): every such x, infinities and NaN included, and for the
    backward with gradients of both signs from 0 and the least subnormal to the largest finite
    value and infinity. Below the core most float16 results are zeros whose sign must be right;
    bfloat16's are not, and its elements there must go to the fallback."""
    every = all_values(dtype)
    x = every[~(every.abs() <= 8)]
    info = torch.finfo(dtype)
    grads = torch.tensor([0.0, info.smallest_normal * info.eps, info.smallest_normal, 0.5, 1.0,
                          3.0, 1000.0, info.max, float("inf")], dtype=dtype)
    grads = torch.cat([grads, -grads])
    grad, x_grid = grads.repeat_interleave(len(x)), x.repeat(len(grads))
    for pass_name, inputs, expected in [
        ("forward", [x], ops.gelu(x, approximate)),
        ("backward", [grad, x_grid], ops.gelu_backward(grad, x_grid, approximate)),
    ]:
        out = torch.full_like(inputs[-1], float("nan"))
        launch_contiguous(emulated, pass_name, approximate, [out], inputs)
        assert_devices_agree(out, expected, 0, f"{pass_name}, {dtype} beyond the core")


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


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_bias_sums_at_midpoints_and_large(emulated, dtype, approximate):
    """The bias passes at sums the narrow path leaves to its fallback's second look: 16-bit
    midpoints from 2 to 200 (x a 16-bit value, b half its unit), large sums that are not
    midpoints, and sums from -12 to -2, whose float16 results run through its subnormals; the
    backward's gradients from 1/8 to 4 in magnitude."""
    every = all_values(dtype).double()
    v = every[(every >= 2) & (every < 200)]
    half_unit = (v.to(dtype).view(torch.int16) + 1).view(dtype).double() - v
    small = every[(every.abs() >= 2.0**-6) & (every.abs() < 2.0)][::7]
    negative = every[(every > -12) & (every <= -2)]
    large = v[::3].repeat_interleave(4)

    def cycled(values, n):
        return values.repeat(n // len(values) + 1)[:n]

    x = torch.cat([v, large, negative]).to(dtype)
    b = torch.cat([half_unit / 2, cycled(small, len(large)), cycled(small, len(negative))])
    b = b.to(dtype)
    grad = cycled(every[(every.abs() >= 2.0**-3) & (every.abs() < 4)][::5], len(x)).to(dtype)
    for pass_name, inputs in [("bias_forward", [x, b]), ("bias_backward", [grad, x, b])]:
        check_pass(launch_contiguous, emulated, pass_name, approximate, inputs, x.shape,
                   f"{len(x)} midpoint, large and negative sums")


def subnormal_result_inputs(pass_name, approximate):
    """The float16 inputs whose result (f, or f' for the backward with unit gradients) is a
    float16 subnormal: the narrow path leaves every one of them to its fallback."""
    x = all_values(torch.float16)
    x = x[x.isfinite()]
    f, d1 = reference_and_scales(x, approximate)[:2]
    value = (f if pass_name == "forward" else d1).abs()
    return x[(value > 2.0**-24) & (value < 2.0**-14)]


@pytest.mark.parametrize("kernel", ["contiguous", "rows"])
@pytest.mark.parametrize("share", [1.0, 0.3, 0.02])
@pytest.mark.parametrize("pass_name", ["forward", "backward"])
def test_narrow_fallback_queue(emulated, pass_name, approximate, share, kernel):
    """The 16-bit kernels queue each vector the narrow path leaves unsure in its warp's entries,
    redo 32 of them once 32 or more wait, and redo the rest after the loop. Here a given share of
    the vectors (all of them: 32 queued every round; 30%: about 10 per round, so that the queue
    is redone part full and entries move up; 2%: rarely, redone at the end) holds one to eight
    float16 inputs of subnormal results, at random places, through the contiguous kernel and the
    rows kernel (the input a column slice of a wider tensor), over four rounds of the grid-stride
    loop and a fifth that ends inside a warp, whose lanes past the end must still take part."""
    width = vector_width(torch.float16)
    per_lane = lane_vectors(torch.float16, pass_name)
    assert per_lane == 2
    # Rows kernel: a lane's two rows of one column, 16 columns; the fifth round 16 lanes into a
    # warp, the last lane's second row past the end.
    rows, cols = 2 * (5 * THREADS // 16 - 3) - 1, 16 * width
    lane_rounds = -(-rows // per_lane) * 16
    n = rows * cols
    if kernel == "contiguous":
        # Pairs of vectors 32 apart: the fifth round's last warp has its lanes' first vectors
        # and half of their second ones.
        n = (10 * THREADS - 80) * width
        lane_rounds = n // (width * per_lane)
    generator = torch.Generator().manual_seed(int(share * 100))
    x = make_inputs(["x"], n, torch.float16, seed=3)[0]
    pool = subnormal_result_inputs(pass_name, approximate)
    assert len(pool) > 100
    vectors = x.view(-1, width)
    chosen = torch.rand(len(vectors), generator=generator) < share
    unsure = torch.rand(len(vectors), width, generator=generator) < (
        torch.randint(1, width + 1, (len(vectors), 1), generator=generator) / width)
    unsure[:, 0] |= ~unsure.any(dim=1)
    unsure &= chosen[:, None]
    picks = torch.randint(0, len(pool), (int(unsure.sum()),), generator=generator)
    vectors[unsure] = pool[picks]
    inputs = [x] if pass_name == "forward" else [torch.ones_like(x), x]
    if kernel == "rows":
        inputs = [torch.cat([t.view(rows, cols)] * 2, dim=1)[:, :cols] for t in inputs]
        check_pass(launch_strided, emulated, pass_name, approximate, inputs, (rows, cols),
                   f"{share:.0%} of vectors unsure")
    else:
        check_pass(launch_contiguous, emulated, pass_name, approximate, inputs, (n,),
                   f"{share:.0%} of vectors unsure")
    (launch,) = take_launches(emulated)
    assert launch[0].startswith(f"{kernel}_kernel<") and rounds(launch, lane_rounds) == 5, launch


@pytest.mark.parametrize("dtype", [torch.float32, *HALF_DTYPES])
def test_results_within_bounds_of_the_exact_values(emulated, dtype, approximate):
    """Against the float64 reference, not the CPU kernels: f, f' and f'' (the backward passes
    with unit gradients) within the bounds the tests of every device use. On the GPU float32
    takes the double path, which measures 0.502 ulp; 16-bit results are correctly rounded (every
    input but the tiny ones, which test_forward.py covers)."""
    if dtype in HALF_DTYPES:
        x = all_values(dtype)
        x = x[x.double().abs() >= TINY_INPUT]
    else:
        x = torch.cat([binade_samples(dtype, per_binade=16), torch.linspace(-10, 10, 20001),
                       torch.linspace(-70, -5, 2001)])
    x = x[x.isfinite()]
    f, d1, d2, s1, s2 = reference_and_scales(x, approximate)
    y = torch.full_like(x, float("nan"))
    launch_contiguous(emulated, "forward", approximate, [y], [x])
    z = x.double()
    assert_ulps(y, f, FORWARD_ULPS[dtype], f"forward {dtype} {approximate}", x,
                mp_exact(z, approximate, 0))
    one, dx, ddx = torch.ones_like(x), torch.full_like(x, float("nan")), torch.full_like(x, 0.0)
    launch_contiguous(emulated, "double_backward", approximate, [dx, ddx], [one, one, x])
    assert_within(dx, d1, s1, FIRST_DERIVATIVE_ULPS[dtype], dtype, f"f' {dtype} {approximate}", x,
                  mp_exact(z, approximate, 1))
    assert_within(ddx, d2, s2, SECOND_DERIVATIVE_ULPS[dtype], dtype, f"f'' {dtype} {approximate}",
                  x, mp_exact(z, approximate, 2))


# Operands other than x that make a float64 result zero, tiny, huge or not finite.
SPECIAL_OPERANDS = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e308,
                                 -1e308, 1e-300, -1e-300, 5e-324, 2.0**-900, 3.0],
                                dtype=torch.float64)


@pytest.mark.parametrize("pass_name", [p for p in PASSES if p not in ("forward", "bias_forward")])
def test_float64_special_operands_agree_with_cpu(emulated, pass_name, approximate):
    """The pair path keeps a result only where its magnitude lies in (2^-900, inf) (the device
    form tests the bits); the rest go to the double-double path, whose IEEE products give the
    CPU's zeros, signs, infinities and NaN. Gradients and geglu's up drawn from special values,
    x over the pair path's domains."""
    n = 3000
    roles = PASSES[pass_name][1]
    inputs = make_inputs(roles, n, torch.float64, seed=5)
    g = torch.Generator().manual_seed(5)
    for k, role in enumerate(roles):
        if role == "grad":
            inputs[k] = SPECIAL_OPERANDS[torch.randint(len(SPECIAL_OPERANDS), (n,), generator=g)]
    check_pass(launch_contiguous, emulated, pass_name, approximate, inputs, (n,),
               "special operands")


def test_float64_results_within_bounds_of_mpmath(emulated, approximate):
    """The GPU's float64 paths against mpmath: f and the backward's f' (the pair path, with the
    double-double path for what it leaves) and the double backward's f' and f'' (double-double),
    at every binade, the transition, the tail to underflow and the pair path's domain edges."""
    x = torch.cat([binade_samples(torch.float64, per_binade=1)[::16],
                   torch.linspace(-40, 10, 201, dtype=torch.float64), single_path_edges_f64()])
    x = x[x.abs() < 1e300]
    one = torch.ones_like(x)
    y, d1, d2 = (torch.full_like(x, float("nan")) for _ in range(3))
    launch_contiguous(emulated, "forward", approximate, [y], [x])
    launch_contiguous(emulated, "double_backward", approximate, [d1, d2], [one, one, x])
    slope = torch.full_like(x, float("nan"))
    launch_contiguous(emulated, "backward", approximate, [slope], [one, x])
    f, f1, f2 = MpValues.of(x, approximate, 0, 1, 2)
    s1, s2 = derivative_scales(x, approximate)
    assert_ulps(y, f, FORWARD_ULPS[torch.float64], f"f {approximate}", x)
    assert_within(slope, f1, s1, FIRST_DERIVATIVE_ULPS[torch.float64], torch.float64,
                  f"backward's f' {approximate}", x)
    assert_within(d1, f1, s1, FIRST_DERIVATIVE_ULPS[torch.float64], torch.float64,
                  f"f' {approximate}", x)
    assert_within(d2, f2, s2, SECOND_DERIVATIVE_ULPS[torch.float64], torch.float64,
                  f"f'' {approximate}", x)


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
    """29 columns: the strided kernel, an element per thread, in three rounds of the grid-stride
    loop (143 x 29 elements > 2 x 2048 threads). 32 columns: where every operand's rows are
    contiguous and 16-byte aligned (broadcast, halves), the rows kernel, a vector per thread;
    elsewhere the strided kernel."""
    rows = 143
    for layout, inputs, spread_outputs in strided_layouts(rows, cols, dtype,
                                                          PASSES[pass_name][1]):
        check_pass(launch_strided, emulated, pass_name, approximate, inputs, (rows, cols),
                   f"{layout} layout", spread_outputs)
        (launch,) = take_launches(emulated)
        rows_kernel = cols == 32 and layout in ("broadcast", "halves")
        assert launch[0].startswith("rows_kernel<" if rows_kernel else "strided_kernel<"), (
            layout, launch)
        if not rows_kernel and cols == 29:
            assert rounds(launch, rows * cols) == 3, launch


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("pass_name", PASSES)
def test_rows_kernel_grid_stride(emulated, pass_name, dtype):
    """More lanes' work (rows of 24 vectors, each lane one vector of a row, or on the narrow path
    one column's vectors of two rows) than the emulated grid has threads (8 blocks x 256), so
    threads step on to later rows in three rounds, and 24 does not divide that step, so their
    columns wrap. On the narrow path the last row is alone (401 rows)."""
    per_lane = lane_vectors(dtype, pass_name)
    rows, cols = 200 if per_lane == 1 else 401, 24 * vector_width(dtype)
    lane_rounds = -(-rows // per_lane) * 24
    assert 2 * THREADS < lane_rounds <= 3 * THREADS and THREADS % 24 != 0
    for layout, inputs, _ in strided_layouts(rows, cols, dtype, PASSES[pass_name][1]):
        if layout in ("broadcast", "halves"):
            check_pass(launch_strided, emulated, pass_name, "none", inputs, (rows, cols),
                       f"{layout} layout")
            (launch,) = take_launches(emulated)
            assert launch[0].startswith("rows_kernel<") and rounds(launch, lane_rounds) == 3, launch
        else:
            take_launches(emulated)


def test_rows_of_vectors_need_aligned_rows(emulated):
    """Rows whose starts are not all 16-byte aligned take the strided kernel: a row stride of 36
    bytes, or an input starting 4 bytes past an aligned address. (The layout tests take the tanh
    form, whose float32 results here are the CPU's bits.)"""
    base = gelu_arguments(37 * 9 + 1, torch.float32, seed=5)
    for what, x in [("row stride 36 bytes", base[:37 * 9].view(37, 9)[:, :8]),
                    ("start 4 bytes off", base[1:1 + 37 * 8].view(37, 8))]:
        out = torch.full((37, 8), float("nan"))
        launch_strided(emulated, "forward", "tanh", [out], [x])
        assert_devices_agree(out, ops.gelu(x.contiguous(), "tanh"), 0, f"forward, {what}")
        (launch,) = take_launches(emulated)
        assert launch[0].startswith("strided_kernel<"), (what, launch)


def test_three_dimensional_strided_layout(emulated):
    """More dimensions than two: a permuted [4, 5, 6] input, each offset from its own index."""
    x = gelu_arguments(120, torch.float32, seed=3).reshape(4, 5, 6).permute(2, 0, 1)
    out = torch.full(x.shape, float("nan"), dtype=torch.float32)
    launch_strided(emulated, "forward", "tanh", [out], [x])
    assert_devices_agree(out, ops.gelu(x.contiguous(), "tanh"), 0, "forward, permuted 3-D")


# ---------------------------------------------------------------------------------------------
# The launch plan of cuda/ops_cuda.cpp (cuda/launch_plan.h): which kernel, index width and pieces.

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("pass_name", PASSES)
def test_plan_takes_16_byte_vectors_only_where_every_operand_is_aligned(emulated, pass_name,
                                                                        dtype):
    """1-D contiguous operands (a length with a tail), each in turn starting 1 .. 16 / size - 1
    elements past a 16-byte boundary, or the outputs so: the contiguous kernel's 16-byte vectors
    only where every address is aligned, else the strided kernel (a misaligned vector load
    faults on a GPU, and on the CPU would go unnoticed), with the same results either way."""
    width = vector_width(dtype)
    n = 2 * THREADS + 3
    roles = PASSES[pass_name][1]
    padded = make_inputs(roles, n + width, dtype, seed=7)
    cases = [("aligned", [t[:n] for t in padded], 0)]
    for k in range(len(roles)):
        for shift in range(1, width):
            cases.append((f"input {k} {shift} elements off",
                          [t[shift:shift + n] if j == k else t[:n] for j, t in enumerate(padded)],
                          0))
    cases.append(("outputs 1 element off", [t[:n] for t in padded], 1))
    for what, inputs, output_offset in cases:
        aligned = all(t.data_ptr() % 16 == 0 for t in inputs) and output_offset == 0
        check_pass(launch_planned, emulated, pass_name, "none", inputs, (n,), what,
                   output_offset=output_offset)
        launches = take_launches(emulated)
        kernels = {kernel.split("<")[0] for kernel, _, _ in launches}
        assert kernels == {"contiguous_kernel" if aligned else "strided_kernel"}, (what, launches)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("pass_name", PASSES)
def test_plan_index_width(emulated, pass_name, dtype):
    """The contiguous kernel indexes in 32 bits up to the limit (INT32_MAX on a GPU; 4096 here)
    and in 64 bits beyond it, with the same results."""
    limit = 4096
    for n in (limit, limit + 1, 3 * THREADS * vector_width(dtype) + 1):
        inputs = make_inputs(PASSES[pass_name][1], n, dtype, seed=n)
        check_pass(lambda *args: launch_planned(*args, index_limit=limit), emulated, pass_name,
                   "tanh", inputs, (n,), f"n={n}, limit {limit}")
        (launch,) = take_launches(emulated)
        bits = 32 if n <= limit else 64
        assert launch[0].startswith("contiguous_kernel<") and f"int{bits}_t" in launch[0], launch


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("pass_name", PASSES)
def test_plan_splits_for_32_bit_offsets(emulated, pass_name, dtype):
    """Layouts whose elements or byte offsets exceed the index limit (here a few kilobytes, on a
    GPU INT32_MAX) are cut into pieces that fit, each launched on its own (rows or strided
    kernel), with every element computed once: the transposed, broadcast, halves and spread
    layouts of 150 x 40, and a misaligned 1-D one."""
    limit = 3000
    rows, cols = 150, 40
    roles = PASSES[pass_name][1]
    cases = list(strided_layouts(rows, cols, dtype, roles, seed=11))
    flat = make_inputs(roles, rows * cols + 1, dtype, seed=12)
    cases.append(("misaligned 1-D", [t[1:] for t in flat], False))
    for layout, inputs, spread_outputs in cases:
        shape = (rows * cols,) if layout == "misaligned 1-D" else (rows, cols)
        check_pass(lambda *args: launch_planned(*args, index_limit=limit), emulated, pass_name,
                   "sigmoid", inputs, shape, f"{layout} layout, limit {limit}", spread_outputs)
        launches = take_launches(emulated)
        # At least the pieces that the largest operand span needs, each no larger than the limit.
        span = max((rows * cols) * t.element_size() * (2 if spread_outputs else 1)
                   for t in inputs)
        assert len(launches) >= span // limit, (layout, len(launches))
        assert all(k.startswith(("rows_kernel<", "strided_kernel<")) for k, _, _ in launches)


def plan_pieces(lib, operands, index_limit):
    """(elements, first operand's start offset, largest byte span of any operand) of each piece
    that cuda/launch_plan.h cuts these operands' iteration into."""
    sizes, strides = iteration(operands)
    flat = [s for per_operand in strides for s in per_operand]
    args = [len(operands), pointers(operands), len(sizes), (ctypes.c_int64 * len(sizes))(*sizes),
            (ctypes.c_int64 * len(flat))(*flat), ctypes.c_int64(index_limit)]
    count = lib.emulated_plan_pieces(*args, None, ctypes.c_int64(0))
    pieces = (ctypes.c_int64 * (3 * count))()
    lib.emulated_plan_pieces(*args, pieces, ctypes.c_int64(count))
    return [tuple(pieces[3 * i:3 * i + 3]) for i in range(count)]


@pytest.mark.parametrize("limit", [1, 100, 4096, 2**31 - 1])
def test_plan_pieces_fit_the_limit(emulated, limit):
    """Every piece holds at most `limit` elements and spans at most `limit` bytes of each
    operand, and the pieces cover the iteration once: a transposed float64 input (byte offsets to
    48,000) beside a contiguous output, and an output with a column stride of 2, broadcast
    against a bias. The same pieces are launched, one launch each."""
    lib = emulated
    x = gelu_arguments(6000, torch.float64, seed=9).reshape(1000, 6).t()
    out = torch.full(x.shape, float("nan"), dtype=torch.float64)
    wide = torch.full((6, 2000), float("nan"), dtype=torch.float64)
    bias = torch.zeros(1000, dtype=torch.float64).expand(6, 1000)
    for operands in ([out, x], [wide[:, ::2], x, bias]):
        pieces = plan_pieces(lib, operands, limit)
        assert sum(n for n, _, _ in pieces) == x.numel()
        assert all(n <= limit and span <= limit for n, _, span in pieces), pieces[:5]
        if limit >= 48000:
            assert len(pieces) == 1
    if limit == 100:
        launch_planned(lib, "forward", "tanh", [out], [x], index_limit=limit)
        assert_devices_agree(out, ops.gelu(x.contiguous(), "tanh"), 0, "forward, split transposed")
        assert len(take_launches(lib)) == len(plan_pieces(lib, [out, x], limit))


def test_empty_launches_do_nothing(emulated):
    out = torch.full((4,), 7.0)
    x = torch.zeros(4)
    for bits in (0, 1):
        assert emulated.emulated_launch_contiguous(0, 0, 0, pointers([out, x]), ctypes.c_int64(0),
                                                   bits) == 0
    zero = (ctypes.c_int32 * 2)(0, 4)
    strides = (ctypes.c_int32 * 4)(4, 16, 4, 16)
    assert emulated.emulated_launch_strided(0, 0, 0, pointers([out, x]), 2, zero, strides) == 0
    zero64, strides64 = (ctypes.c_int64 * 2)(0, 4), (ctypes.c_int64 * 4)(4, 16, 4, 16)
    assert emulated.emulated_launch_iteration(0, 0, 0, pointers([out, x]), 2, zero64, strides64,
                                              ctypes.c_int64(2**31 - 1)) == 0
    assert torch.equal(out, torch.full((4,), 7.0))
    assert take_launches(emulated) == []


def test_32_bit_index_refuses_what_it_cannot_hold(emulated):
    """A 32-bit launch of more than INT32_MAX elements is refused (the plan never asks for one),
    before anything is read or written."""
    out, x = torch.full((4,), 7.0), torch.zeros(4)
    assert emulated.emulated_launch_contiguous(0, 0, 0, pointers([out, x]),
                                               ctypes.c_int64(2**31), 0) != 0
    assert torch.equal(out, torch.full((4,), 7.0)) and take_launches(emulated) == []


def test_float32_route_within_its_bounds(emulated_float32_route, approximate):
    """float32 on the float path (compute capability 8.6's route) and on the mixed form (8.0's)
    against the float64 reference: f, f' and f'' through the forward and double backward
    kernels, every binade, a dense grid and the tails."""
    lib, route, bounds = emulated_float32_route
    x = torch.cat([binade_samples(torch.float32, per_binade=16), torch.linspace(-10, 10, 20001),
                   torch.linspace(-70, -5, 2001)])
    x = x[x.isfinite()]
    f, d1, d2, s1, s2 = reference_and_scales(x, approximate)
    z = x.double()
    y = torch.full_like(x, float("nan"))
    launch_contiguous(lib, "forward", approximate, [y], [x])
    assert_ulps(y, f, bounds["f"], f"{route} forward {approximate}", x,
                mp_exact(z, approximate, 0))
    one, dx, ddx = torch.ones_like(x), torch.full_like(x, float("nan")), torch.full_like(x, 0.0)
    launch_contiguous(lib, "double_backward", approximate, [dx, ddx], [one, one, x])
    assert_within(dx, d1, s1, bounds["f'"], torch.float32,
                  f"{route} f' {approximate}", x, mp_exact(z, approximate, 1))
    assert_within(ddx, d2, s2, bounds["f''"], torch.float32,
                  f"{route} f'' {approximate}", x, mp_exact(z, approximate, 2))


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_float_path_step_of_the_16_bit_forward(emulated_float_path, dtype, approximate):
    """Where FP64 is slow, the 16-bit forward redoes the narrow path's leftovers on the float
    path before the double path (gelu_cuda.cu's apply_float_path), run here on every 16-bit
    input: each result it calls sure is the correctly rounded one (the CPU kernels', which
    test_forward.py checks against mpmath), and it calls sure all but about 1 in 1000 of the
    results that are normal numbers of the type, so that the double path stays rare."""
    x = all_values(dtype)
    y = torch.full_like(x, float("nan"))
    sure = torch.zeros(x.shape, dtype=torch.uint8)
    emulated_float_path.emulated_float_path_forward(
        VARIANT_CODES[approximate], DTYPE_CODES[dtype], ctypes.c_void_p(x.data_ptr()),
        ctypes.c_void_p(y.data_ptr()), ctypes.c_void_p(sure.data_ptr()), ctypes.c_int64(len(x)))
    expected = ops.gelu(x, approximate)
    taken = sure.bool()
    assert_devices_agree(y[taken], expected[taken], 0,
                         f"float path step, {dtype} forward {approximate}")
    normal = expected.isfinite() & (expected.abs() >= torch.finfo(dtype).tiny)
    unsure = (~taken & normal).sum().item()
    assert unsure <= normal.sum().item() / 1000, f"{unsure} normal results left unsure"


@pytest.mark.parametrize("pass_name", PASSES)
def test_float32_route_passes_agree_with_cpu_within_two_ulps(emulated_float32_route, pass_name,
                                                             approximate):
    """Every pass of the float path and of the mixed form, over three rounds of the grid, against
    the CPU's double path: both within their bounds of the exact value, so within 2 ulps of each
    other's magnitude (or the terms' scale), signs of zero, infinities and NaN alike."""
    lib, route, _ = emulated_float32_route
    n = rounds_of_contiguous(torch.float32, pass_name)
    inputs = make_inputs(PASSES[pass_name][1], n, torch.float32)
    _, _, cpu_op, scales = PASSES[pass_name]
    outputs = [torch.full((n,), float("nan")) for _ in range(NUM_OUTPUTS.get(pass_name, 1))]
    launch_contiguous(lib, pass_name, approximate, outputs, inputs)
    expected = cpu_op(inputs, approximate)
    for k, (got, want) in enumerate(zip(outputs, expected)):
        assert_devices_agree(got, want, lambda: scales([t.double() for t in inputs],
                                                       approximate)[k],
                             f"{route} {pass_name} output {k}", same_path=False)
