"""Static checks of the CUDA kernels' sm_90 machine code, which need no GPU: no kernel touches
local memory (a spill costs a round trip per element), and the contiguous and rows kernels move
16 bytes per load and store. A CPU-side change to gelu_math.h (shared with the GPU) once made
the float64 backward spill unnoticed; this compiles the kernels as setup.py builds them (about a
minute) and reads them with bench/sass_report.py. Skipped without nvcc and cuobjdump, or with a
torch built without CUDA (whose install builds no CUDA kernels)."""

import shutil
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import sass_report  # noqa: E402


@pytest.fixture(scope="module")
def sm90_kernels():
    if torch.version.cuda is None:
        pytest.skip(f"torch {torch.__version__} has no CUDA: gelu_ext builds no CUDA kernels")
    try:
        sass_report.find_tool("nvcc")
        sass_report.find_tool("cuobjdump")
    except SystemExit as missing:
        pytest.skip(str(missing))
    if shutil.which("g++") is None and shutil.which("c++") is None:
        pytest.skip("nvcc needs a host compiler")
    cubin, _ = sass_report.compile_cubin()
    return list(sass_report.kernels(cubin))


def test_no_kernel_uses_local_memory(sm90_kernels):
    assert len(sm90_kernels) > 100, "expected every pass, variant, dtype and index width"
    spilling = {name: n for name, instructions in sm90_kernels
                if (n := sum(op.startswith(("LDL", "STL")) for _, op, _ in instructions))}
    assert not spilling, f"local-memory loads and stores (spills): {spilling}"


def test_vector_kernels_move_16_bytes_at_a_time(sm90_kernels):
    narrow = []
    for name, instructions in sm90_kernels:
        kind = sass_report.parse_name(name)[0]
        if kind == "strided":  # an element per thread, by design
            continue
        loop = sass_report.main_loop(instructions) or []
        ops = [op for _, op, _ in loop]
        if not (any(op.startswith("LDG.E.128") for op in ops)
                and any(op.startswith("STG.E.128") for op in ops)):
            narrow.append(name)
    assert not narrow, f"main loops without 16-byte loads and stores: {narrow}"
