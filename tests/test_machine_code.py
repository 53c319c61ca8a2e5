"""Static checks of the CUDA kernels' machine code, for every architecture the default build
compiles to SASS (setup.py's DEFAULT_CUDA_ARCHS), without a GPU: no kernel touches local memory
(a spill costs a round trip per element), the contiguous and rows kernels move 16 bytes per load
and store, and wherever the route table puts a pass on the float path its kernel's main loop runs
no FP64 instruction. A CPU-side change to the math (shared with the GPU) once made the float64
backward spill unnoticed. The machine code read (by bench/sass_report.py) is the built
library's, for each architecture it holds; the others are compiled as setup.py builds them (about
half a minute per architecture, in parallel; bench/sass_report.py keeps the cubins in the temporary
directory, so reruns and bench/gpu_model.py reuse them). Skipped without cuobjdump (and nvcc, where
something must be compiled), or with a torch built without CUDA (whose install builds no CUDA
kernels).

And the compiler flags the build gives: the math writes every fused multiply-add it wants as
fma(), so the build must forbid the compilers to fuse a * b + c on their own (--fmad=false for
nvcc, -ffp-contract=off for the host compiler), or error-free transformations stop being exact
and the CPU and GPU stop computing the same operations."""

import os
import platform
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import sass_report  # noqa: E402
from test_build import run_setup  # noqa: E402


def default_sass_archs():
    """The architectures of setup.py's DEFAULT_CUDA_ARCHS that get real SASS ("8.6" -> sm_86)."""
    m = re.search(r'^DEFAULT_CUDA_ARCHS = "([^"]+)"', (ROOT / "setup.py").read_text(), re.M)
    assert m, "setup.py defines DEFAULT_CUDA_ARCHS"
    return ["sm_" + a.replace("+PTX", "").replace(".", "") for a in m.group(1).split(";")]


ARCHS = default_sass_archs()


def skip_where_cuobjdump_is_older(nvcc, cuobjdump):
    """cuobjdump (triton's, where the toolkit has none) cannot read the cubins of a newer nvcc:
    an older torch brings an older triton."""
    built, reader = sass_report.tool_release(nvcc), sass_report.tool_release(cuobjdump)
    if built and reader and reader[0] < built[0]:
        pytest.skip(f"cuobjdump {reader[0]}.{reader[1]} ({cuobjdump}) cannot read the cubins of "
                    f"nvcc {built[0]}.{built[1]}")


@pytest.fixture(scope="module")
def kernels_by_arch():
    if torch.version.cuda is None:
        pytest.skip(f"torch {torch.__version__} has no CUDA: gelu_ext builds no CUDA kernels")
    try:
        nvcc, cuobjdump = sass_report.find_tool("nvcc"), sass_report.find_tool("cuobjdump")
    except SystemExit as missing:
        pytest.skip(str(missing))
    skip_where_cuobjdump_is_older(nvcc, cuobjdump)
    if shutil.which("g++") is None and shutil.which("c++") is None:
        pytest.skip("nvcc needs a host compiler")
    library = library_with_cuda_kernels()
    built = {arch: sass_report.library_kernels(library, arch) for arch in ARCHS} if library else {}
    missing = [arch for arch in ARCHS if not built.get(arch)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        cubins = dict(zip(missing, pool.map(lambda a: sass_report.compile_cubin(a)[0], missing)))
    return {**built, **{arch: list(sass_report.kernels(cubin)) for arch, cubin in cubins.items()}}


def library_with_cuda_kernels():
    """gelu_ext's built library, where it holds the CUDA backend (its machine code is what these
    tests read, for each architecture it was built for), else None."""
    import gelu_ext

    if not torch._C._dispatch_has_kernel_for_dispatch_key("gelu_ext::gelu", "CUDA"):
        return None
    return gelu_ext._C.__file__


# Paths that compute in float alone (a bounded path's fallback is a rare branch, not counted).
FLOAT_PATHS = {"narrow16", "f32_via_f32"}
# bench/sass_report.py's pass names, as tools/route_table.cpp prints them.
ROUTE_PASS_NAMES = {"forward": "forward", "backward": "backward",
                    "double backward": "double backward", "bias_gelu": "bias forward",
                    "bias_gelu backward": "bias backward", "geglu": "geglu forward",
                    "geglu backward": "geglu backward"}


@pytest.fixture(scope="module")
def float_path(tmp_path_factory):
    """float_path(arch, dtype, pass_name, variant) -> bool, from csrc/math/route.h itself (through
    tools/route_table.cpp --list): True where that kernel, compiled for arch, computes in float."""
    cxx = shutil.which("g++") or shutil.which("c++")
    binary = tmp_path_factory.mktemp("route_table") / "route_table"
    subprocess.run([cxx, "-std=c++17", "-I", str(ROOT / "csrc"),
                    str(ROOT / "tools" / "route_table.cpp"), "-o", str(binary)], check=True)
    listing = subprocess.run([str(binary), "--list"], capture_output=True, text=True,
                             check=True).stdout
    paths = {}
    for line in listing.splitlines():
        device, arch, dtype, pass_name, form, path = line.split("\t")
        if device == "CUDA":
            paths[arch, dtype, pass_name, form] = path
    return lambda arch, dtype, pass_name, variant: \
        paths[arch, dtype, ROUTE_PASS_NAMES[pass_name], variant] in FLOAT_PATHS


@pytest.mark.parametrize("arch", ARCHS)
def test_no_kernel_uses_local_memory(kernels_by_arch, arch):
    kernels = kernels_by_arch[arch]
    assert len(kernels) > 100, "expected every pass, variant, dtype and index width"
    spilling = {name: n for name, instructions in kernels
                if (n := sass_report.local_memory(instructions))}
    assert not spilling, f"{arch}: local-memory loads and stores (spills): {spilling}"


@pytest.mark.parametrize("arch", ARCHS)
def test_vector_kernels_move_16_bytes_at_a_time(kernels_by_arch, arch):
    narrow, vector_kernels = [], 0
    for name, instructions in kernels_by_arch[arch]:
        parsed = sass_report.parse_name(name)
        if parsed is None or parsed[0] == "strided":  # an element per thread, by design
            continue
        vector_kernels += 1
        if not sass_report.moves_16_bytes(sass_report.main_loop(instructions) or []):
            narrow.append(name)
    assert vector_kernels > 100, "expected the contiguous and rows kernels"
    assert not narrow, f"{arch}: main loops without 16-byte loads and stores: {narrow}"


@pytest.mark.parametrize("arch", ARCHS)
def test_float_path_main_loops_run_no_fp64(kernels_by_arch, float_path, arch):
    on_float_path, with_fp64, float64_loops = 0, [], []
    for name, instructions in kernels_by_arch[arch]:
        parsed = sass_report.parse_name(name)
        if parsed is None:
            continue
        kind, pass_name, variant, (dtype, _), index = parsed
        if not sass_report.is_shown(kind, pass_name, index):
            continue
        # The common path: rare slow paths behind a branch (a division's special cases, the
        # 16-bit narrow path's fallback) are bench/gpu_model.py's to weigh.
        fp64 = sass_report.pipe_counts(sass_report.hot_path(
            sass_report.main_loop(instructions) or []))["fp64"]
        if dtype == "float64":
            float64_loops.append(fp64)
        elif float_path(arch, dtype, pass_name, variant):
            on_float_path += 1
            if fp64:
                with_fp64.append(f"{pass_name} {variant} {dtype}: {fp64} FP64 instructions")
    # The count must see FP64 where it is (float64 data compute in double-double everywhere).
    assert float64_loops and all(float64_loops), "FP64 instructions not recognised"
    assert not with_fp64, f"{arch}: float-path main loops with FP64 instructions: {with_fp64}"
    if on_float_path == 0:
        pytest.skip(f"the route table puts no kernel on the float path on {arch}")
MULTIPLY_ADD = "{prefix} double multiply_add(double a, double b, double c) {{ return a * b + c; }}"


@pytest.fixture(scope="module")
def build_flags(tmp_path_factory):
    """The per-compiler flags setup.py gives the extension here (CUDA built whenever it can be)."""
    code, output, arguments = run_setup(tmp_path_factory.mktemp("setup"))
    assert code == 0, f"setup.py failed:\n{output}"
    return arguments


def test_host_code_is_built_without_implicit_fma(build_flags, tmp_path):
    """With the host flags of the build, a * b + c is a multiply and an add; without them, g++
    fuses it (so the check can tell)."""
    if shutil.which("g++") is None or platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("needs g++ on x86-64")
    source = tmp_path / "multiply_add.cpp"
    source.write_text(MULTIPLY_ADD.format(prefix='__attribute__((target("fma")))'))

    def assembly(flags):
        return subprocess.run(["g++", *flags, "-S", "-o", "-", str(source)], capture_output=True,
                              text=True, check=True).stdout

    assert "vfmadd" in assembly(["-O3"]), "g++ no longer fuses by default: the check proves nothing"
    fused = assembly(build_flags["cxx"])
    assert "vfmadd" not in fused and "vmulsd" in fused, (
        f"host code built with {build_flags['cxx']} fuses a * b + c:\n{fused}")


def test_device_code_is_built_with_fmad_false(build_flags, tmp_path):
    """With the nvcc flags of the build (after torch's own), a * b + c is DMUL and DADD in the
    sm_90 machine code; without them, nvcc fuses it into a DFMA (so the check can tell)."""
    if "nvcc" not in build_flags:
        pytest.skip("setup.py builds no CUDA backend here")
    try:
        nvcc, cuobjdump = sass_report.find_tool("nvcc"), sass_report.find_tool("cuobjdump")
    except SystemExit as missing:
        pytest.skip(str(missing))
    skip_where_cuobjdump_is_older(nvcc, cuobjdump)
    from torch.utils import cpp_extension

    source = tmp_path / "multiply_add.cu"
    source.write_text(MULTIPLY_ADD.format(prefix="__device__") + "\n"
                      'extern "C" __global__ void kernel(double* d) { d[0] = '
                      "multiply_add(d[1], d[2], d[3]); }\n")

    def sass(flags):
        cubin = tmp_path / "kernel.cubin"
        subprocess.run([nvcc, *flags, "-arch=sm_90", "-cubin", str(source), "-o", str(cubin)],
                       capture_output=True, text=True, check=True)
        return subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True,
                              check=True).stdout

    assert "DFMA" in sass(["-O3"]), "nvcc no longer fuses by default: the check proves nothing"
    # Nor inexact division, square root or flushed subnormals, which --use_fast_math also brings.
    assert "--use_fast_math" not in build_flags["nvcc"], build_flags["nvcc"]
    flags = [*getattr(cpp_extension, "COMMON_NVCC_FLAGS", []), *build_flags["nvcc"]]
    code = sass(flags)
    assert "DFMA" not in code and "DMUL" in code and "DADD" in code, (
        f"device code built with {build_flags['nvcc']} fuses a * b + c")


def test_cuda_source_compiles_as_the_build_compiles_it(build_flags, tmp_path):
    """gelu_cuda.cu through nvcc's host and device passes with the build's flags, for one
    architecture: compiled cubins come from the device pass alone, which cannot see what only the
    host pass rejects. A library built with the CUDA backend went through both."""
    if "nvcc" not in build_flags:
        pytest.skip("setup.py builds no CUDA backend here")
    if library_with_cuda_kernels():
        pytest.skip("gelu_ext's library was built with its CUDA backend: nvcc compiled this source")
    try:
        nvcc = sass_report.find_tool("nvcc")
    except SystemExit as missing:
        pytest.skip(str(missing))
    from torch.utils import cpp_extension

    flags = [*getattr(cpp_extension, "COMMON_NVCC_FLAGS", []), *build_flags["nvcc"]]
    result = subprocess.run([nvcc, *flags, "-arch=sm_90", "-c", str(ROOT / "csrc" / "cuda" /
                             "gelu_cuda.cu"), "-o", str(tmp_path / "gelu_cuda.o")],
                            capture_output=True, text=True)
    assert result.returncode == 0, f"nvcc failed on gelu_cuda.cu:\n{result.stderr[-4000:]}"
