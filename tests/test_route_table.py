"""DEVELOPERS.md's route table is the one csrc/math/route.h computes: tools/route_table.cpp
prints it from route() itself, and the document must carry that output unchanged."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CXX = shutil.which("g++") or shutil.which("c++")


@pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")
def test_developers_md_shows_the_route_table(tmp_path):
    binary = tmp_path / "route_table"
    build = subprocess.run([CXX, "-std=c++17", "-I", str(ROOT / "csrc"),
                            str(ROOT / "tools" / "route_table.cpp"), "-o", str(binary)],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    table = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    document = (ROOT / "DEVELOPERS.md").read_text()
    shown = re.search(r"<!-- route-table -->\n(.*?)<!-- /route-table -->", document, re.S)
    assert shown, "DEVELOPERS.md lacks its <!-- route-table --> block"
    assert shown.group(1) == table, (
        "DEVELOPERS.md's route table differs from csrc/math/route.h's: paste the output of "
        "tools/route_table.cpp between its route-table markers")


@pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")
def test_python_knows_the_cuda_float32_paths(tmp_path):
    """gelu_ext.reference.cuda_float32_path, which the CUDA tests use to tell where the GPU's
    float32 bits may differ from the CPU's, and by how much, against route() itself."""
    from gelu_ext.reference import cuda_float32_path

    binary = tmp_path / "route_table"
    subprocess.run([CXX, "-std=c++17", "-I", str(ROOT / "csrc"),
                    str(ROOT / "tools" / "route_table.cpp"), "-o", str(binary)], check=True)
    listing = subprocess.run([str(binary), "--list"], capture_output=True, text=True,
                             check=True).stdout
    seen = 0
    for line in listing.splitlines():
        device, arch, dtype, pass_name, form, path = line.split("\t")
        if device == "CUDA" and dtype == "float32":
            number = int(arch[3:])
            capability = (number // 10, number % 10)
            assert path == cuda_float32_path(capability), line
            seen += 1
    assert seen > 0
