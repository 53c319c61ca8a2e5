"""setup.py's choice of backends, as pip runs it, without building: a torch without CUDA gives
the CPU backend alone, saying why; GELU_EXT_CUDA=1 then stops the build, naming the problem; a
bad GELU_EXT_CUDA is refused. Each runs a copy of setup.py and what it reads, with
setuptools.setup replaced, so that nothing of the tree is rewritten."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# setup.py run with setuptools.setup replaced: prints the extension's compile arguments.
CAPTURE_SETUP = """
import json, runpy, sys, setuptools
{preamble}
captured = {{}}
setuptools.setup = lambda **kw: captured.update(kw)
sys.argv = ["setup.py", "--name"]
runpy.run_path("setup.py", run_name="__main__")
print(json.dumps(captured["ext_modules"][0].extra_compile_args))
"""
# A torch that reports no CUDA, as a CPU-only build of torch does.
TORCH_WITHOUT_CUDA = "import torch; torch.version.cuda = None"


def run_setup(folder, gelu_ext_cuda=None, preamble=""):
    """setup.py's run in a copy under folder: (exit code, its output, the extension's compile
    arguments per compiler or None)."""
    (folder / "gelu_ext").mkdir(exist_ok=True)
    for name in ("setup.py", "README.md", "gelu_ext/_version.py"):
        (folder / name).write_text((ROOT / name).read_text())
    env = {k: v for k, v in os.environ.items() if k != "GELU_EXT_CUDA"}
    if gelu_ext_cuda is not None:
        env["GELU_EXT_CUDA"] = gelu_ext_cuda
    result = subprocess.run([sys.executable, "-c", CAPTURE_SETUP.format(preamble=preamble)],
                            cwd=folder, env=env, capture_output=True, text=True)
    output = result.stdout + result.stderr
    arguments = json.loads(result.stdout.strip().splitlines()[-1]) if result.returncode == 0 \
        else None
    return result.returncode, output, arguments


def test_torch_without_cuda_builds_the_cpu_backend_and_says_why(tmp_path):
    code, output, arguments = run_setup(tmp_path, preamble=TORCH_WITHOUT_CUDA)
    assert code == 0, output
    assert "nvcc" not in arguments and "-ffp-contract=off" in arguments["cxx"], arguments
    assert "CPU only (no CUDA: torch" in output and "was built without CUDA)" in output, output
    assert "BACKENDS = ['cpu']" in (tmp_path / "gelu_ext" / "_build_info.py").read_text()


def test_cuda_required_but_impossible_stops_the_build_naming_why(tmp_path):
    code, output, _ = run_setup(tmp_path, gelu_ext_cuda="1", preamble=TORCH_WITHOUT_CUDA)
    assert code != 0
    assert "GELU_EXT_CUDA=1 but the CUDA backend cannot be built" in output, output
    assert "was built without CUDA" in output, output


def test_bad_gelu_ext_cuda_is_refused(tmp_path):
    code, output, _ = run_setup(tmp_path, gelu_ext_cuda="yes")
    assert code != 0
    assert "GELU_EXT_CUDA must be 0, 1, auto or unset, got 'yes'" in output, output
