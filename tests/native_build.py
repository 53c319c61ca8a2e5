"""Native libraries that tests build from the sources with the host compiler (the emulated
AVX-512 and CUDA kernels), kept between runs (CI's later stage, a developer's reruns) in the
temporary directory under a digest of everything the build reads: a rebuild takes a minute or
two. conftest.py starts every build the collected tests need when the run begins, in the
background, and runs those tests last, so that the compiler works while the other tests run."""

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(tempfile.gettempdir())

# Two builds at once: the machines that run the suite have two cores or more.
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="native_build")
_BUILDS = {}  # library path: the future of its build (None: an error text, or success)


def _build(compiler, flags, generated, command, cache, built, what):
    cache.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=cache))
    for file_name, text in generated.items():
        (scratch / file_name).write_text(text)
    result = subprocess.run([compiler, *flags, *command(scratch)], capture_output=True, text=True)
    if result.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        return f"building {what} failed:\n{result.stderr}"
    try:
        scratch.rename(built)  # whole, or not at all: a concurrent run may have won
    except OSError:
        shutil.rmtree(scratch, ignore_errors=True)
    return None


def cached_library(name, compiler, flags, files, generated, command, what, wait=True):
    """The library that command(folder) builds as folder / "library.so", from the compiler
    flags, the source files `files` and the generated ones (file name: text, written into
    folder first); built unless a build of the same inputs is kept or under way. A failed build
    fails the test, naming `what`. wait=False only starts the build, and returns None."""
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout
    digest = hashlib.sha256("\0".join([compiler, *flags, version]).encode())
    for file_name, text in sorted(generated.items()):
        digest.update(file_name.encode() + b"\0" + text.encode())
    for path in sorted(files):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    cache = CACHE / f"gelu_ext_{name}"
    built = cache / digest.hexdigest()[:32]
    library = built / "library.so"
    future = _BUILDS.get(library)
    if future is None and not library.exists():
        future = _BUILDS[library] = _POOL.submit(_build, compiler, flags, generated, command,
                                                 cache, built, what)
    if not wait:
        return None
    error = future.result() if future is not None else None
    if error is not None:
        pytest.fail(error)
    return ctypes.CDLL(str(library))
