"""Build gelu_ext: the CPU backend always, the CUDA backend whenever it can be built.

Environment variables:
  GELU_EXT_CUDA=0|1      0 skips the CUDA backend; 1 requires it (the build fails if impossible).
                         Unset (or auto): build it whenever torch has CUDA and a toolkit of the
                         same CUDA major version is found.
  CUDA_HOME / CUDA_PATH  the CUDA toolkit to use, if it contains include/cuda_runtime.h and
                         bin/nvcc (otherwise it is searched for: find_cuda_toolkit).
  TORCH_CUDA_ARCH_LIST   GPU architectures, e.g. "9.0" or "8.0;9.0+PTX". Unset with no visible GPU:
                         DEFAULT_CUDA_ARCHS below.
  MAX_JOBS               parallel compile jobs (torch's ninja build honours it).
  GELU_EXT_DEBUG=1       -O0 -g host and device code.
"""

import os
import re
import shutil
import subprocess
import sys

import setuptools
from setuptools import find_packages, setup

# pyproject.toml's license is an SPDX expression (PEP 639), which setuptools reads from 77 on;
# older ones reject the file with a schema error that does not say so. pyproject.toml's
# build-system asks for 77, but `pip install --no-build-isolation` builds with what is installed.
_SETUPTOOLS_MAJOR = int(re.match(r"\d+", setuptools.__version__).group())
if _SETUPTOOLS_MAJOR < 77:
    sys.exit(f"gelu_ext needs setuptools>=77 to build, found {setuptools.__version__}: "
             f"pip install -U 'setuptools>=77'")

# SASS for every family that may compile its own path (__CUDA_ARCH__ chooses by the FP64 and
# FP32 rates): 7.5 (Turing, which torch's wheels still build), 8.0 (A100), 8.6 and 8.9 (A10, L4,
# L40S, RTX 30/40: FP64 at 1/64 of FP32), 9.0 (Hopper), 10.0 (B200) and 12.0 (RTX 50); and PTX
# of the newest, which later GPUs compile at load time.
DEFAULT_CUDA_ARCHS = "7.5;8.0;8.6;8.9;9.0;10.0;12.0+PTX"
ROOT = os.path.dirname(os.path.abspath(__file__))


def log(msg):
    print(f"[gelu_ext] {msg}", flush=True)


def is_toolkit(path):
    return bool(path) and os.path.isfile(os.path.join(path, "include", "cuda_runtime.h")) and \
        os.path.isfile(os.path.join(path, "bin", "nvcc"))


def find_cuda_toolkit():
    """Return (path, how) of a real CUDA toolkit, or (None, reasons).

    torch guesses dirname(dirname(which nvcc)), which is wrong when nvcc on PATH is a wrapper
    script (e.g. /usr/local/bin/nvcc exec-ing the real one), so every candidate is verified."""
    tried = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        path = os.environ.get(var)
        if path:
            if is_toolkit(path):
                return os.path.realpath(path), f"${var}"
            tried.append(f"${var}={path} (no include/cuda_runtime.h or bin/nvcc)")
    nvcc = shutil.which("nvcc")
    if nvcc:
        # `nvcc --dryrun` prints the toolkit root on its TOP= line, whatever wraps nvcc.
        try:
            out = subprocess.run([nvcc, "--dryrun", "-c", "-x", "cu", os.devnull],
                                 capture_output=True, text=True, timeout=60)
            m = re.search(r"^#\$ TOP=(.*)$", out.stdout + out.stderr, re.MULTILINE)
            if m and is_toolkit(os.path.normpath(m.group(1).strip())):
                return os.path.realpath(os.path.normpath(m.group(1).strip())), f"`{nvcc} --dryrun`"
        except (OSError, subprocess.SubprocessError) as e:
            tried.append(f"`nvcc --dryrun` failed: {e}")
        real = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        if is_toolkit(real):
            return real, f"realpath of {nvcc}"
        tried.append(f"nvcc at {nvcc} (no toolkit around it)")
    else:
        tried.append("no nvcc on PATH")
    if is_toolkit("/usr/local/cuda"):
        return os.path.realpath("/usr/local/cuda"), "/usr/local/cuda"
    tried.append("/usr/local/cuda (absent)")
    return None, tried


def toolkit_version(path):
    """The toolkit's CUDA version as "major.minor", from include/cuda.h, or None."""
    try:
        with open(os.path.join(path, "include", "cuda.h")) as f:
            m = re.search(r"^#define CUDA_VERSION (\d+)", f.read(), re.MULTILINE)
    except OSError:
        return None
    return f"{int(m.group(1)) // 1000}.{int(m.group(1)) % 1000 // 10}" if m else None


def plan_cuda(torch):
    """Decide whether to build CUDA; sets CUDA_HOME for torch.utils.cpp_extension."""
    want = os.environ.get("GELU_EXT_CUDA", "").strip().lower()
    if want not in ("", "0", "1", "auto"):
        sys.exit(f"[gelu_ext] GELU_EXT_CUDA must be 0, 1, auto or unset, got {want!r}")
    if want == "0":
        return False, "GELU_EXT_CUDA=0"
    problem = None
    if torch.version.cuda is None:
        problem = f"torch {torch.__version__} was built without CUDA"
    else:
        path, how = find_cuda_toolkit()
        if path is None:
            problem = "no CUDA toolkit found; tried: " + "; ".join(how)
        else:
            # torch.utils.cpp_extension refuses a toolkit whose major version differs from
            # torch's own CUDA: say so here, so that an automatic build goes on without CUDA.
            version = toolkit_version(path)
            if version and version.split(".")[0] != torch.version.cuda.split(".")[0]:
                problem = (f"the CUDA toolkit at {path} is CUDA {version}, but torch "
                           f"{torch.__version__} was built with CUDA {torch.version.cuda}: their "
                           f"major versions must match")
            else:
                os.environ["CUDA_HOME"] = path
                log(f"CUDA toolkit: {path}, CUDA {version or '(version unknown)'} "
                    f"(found via {how})")
    if problem:
        if want == "1":
            sys.exit(f"[gelu_ext] GELU_EXT_CUDA=1 but the CUDA backend cannot be built: {problem}")
        return False, problem
    return True, None


def cuda_arch_list(torch):
    archs = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if archs:
        return archs, "TORCH_CUDA_ARCH_LIST"
    if torch.cuda.is_available():
        caps = sorted({torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())})
        return ";".join(f"{a}.{b}" for a, b in caps), "the visible GPUs"
    os.environ["TORCH_CUDA_ARCH_LIST"] = DEFAULT_CUDA_ARCHS
    return DEFAULT_CUDA_ARCHS, "default (no GPU visible)"


def read_version():
    with open(os.path.join(ROOT, "gelu_ext", "_version.py")) as f:
        return re.search(r'__version__ = "([^"]+)"', f.read()).group(1)


def write_build_info(backends, archs):
    with open(os.path.join(ROOT, "gelu_ext", "_build_info.py"), "w") as f:
        f.write("# Written by setup.py at build time.\n")
        f.write(f"BACKENDS = {backends!r}\n")
        f.write(f"CUDA_ARCHS = {archs!r}\n")


def get_extensions():
    import torch
    from glob import glob

    use_cuda, why_not = plan_cuda(torch)
    # Import only now: cpp_extension reads CUDA_HOME when it is first imported.
    from torch.utils import cpp_extension

    debug = os.environ.get("GELU_EXT_DEBUG") == "1"
    opt = ["-O0", "-g"] if debug else ["-O3"]
    cxx = opt + ["-fdiagnostics-color=always",
                 # The math relies on explicit fma() for exact error terms: never fuse implicitly.
                 "-ffp-contract=off", "-fno-math-errno"]
    sources = sorted(glob("csrc/*.cpp") + glob("csrc/cpu/*.cpp"))
    backends = ["cpu"]
    archs = None
    if use_cuda:
        archs, arch_source = cuda_arch_list(torch)
        sources += sorted(glob("csrc/cuda/*.cpp") + glob("csrc/cuda/*.cu"))
        nvcc = opt + ["--fmad=false", "--expt-relaxed-constexpr", "-lineinfo"]
        if debug:
            nvcc += ["-G"]
        ext = cpp_extension.CUDAExtension(
            "gelu_ext._C", sources, py_limited_api=True,
            extra_compile_args={"cxx": cxx, "nvcc": nvcc})
        backends.append("cuda")
        log(f"building backends: CPU, CUDA (archs {archs}, from {arch_source})")
    else:
        ext = cpp_extension.CppExtension(
            "gelu_ext._C", sources, py_limited_api=True, extra_compile_args={"cxx": cxx})
        log(f"building backends: CPU only (no CUDA: {why_not})")
    write_build_info(backends, archs)
    return [ext], cpp_extension.BuildExtension


ext_modules, build_ext = get_extensions()

setup(
    name="gelu_ext",
    version=read_version(),
    description="Accurate, fast GELU for PyTorch: CPU and CUDA kernels, autograd to second order",
    long_description=open(os.path.join(ROOT, "README.md")).read(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["gelu_ext", "gelu_ext.*"]),
    ext_modules=ext_modules,
    cmdclass={"build_ext": build_ext},
    install_requires=["torch>=2.6"],
    extras_require={
        "test": ["pytest", "numpy", "mpmath", "transformers"],
        "bench": ["numpy", "matplotlib"],
        "hf": ["transformers"],
    },
    python_requires=">=3.9",
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
