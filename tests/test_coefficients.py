"""csrc/math/coefficients.inc states each polynomial's interval and largest error: re-measured
against mpmath from the stored coefficients, every stated error must hold (to the 0.1 in log2 it
is printed with) and lie below what the paths' error analyses require, and the file must be the
generator's own rendering (no coefficient edited by hand). The constants of the GPU forms' exact
splits must make them exact."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


def test_coefficients_match_their_stated_errors():
    pytest.importorskip("mpmath")
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "fit_polynomials.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_tanh_forms_difference_of_w_is_exact():
    """narrow16.h's tanh form at float arguments takes w = t^2 + kRatio's rounding error, and t^2's,
    as one fma of t, t and kRatio - w: that is their sum rounded once only if kRatio - w is exact,
    as it is for every t^2 below 128 (t within the core, 9) because kRatio is a multiple of 2^-17.
    Every float t^2 in [8, 32), where w crosses 32, every one whose w lies within 2^16 units of 64
    or 128, and 2^22 random ones below 128, against float64 (where the difference is exact)."""
    source = (ROOT / "csrc" / "math" / "narrow16.h").read_text()
    ratio = float(re.search(r"kRatio = ([0-9.]+)f;", source).group(1))
    assert torch.tensor(ratio, dtype=torch.float32).item() == ratio
    bits = lambda v: int(torch.tensor(v, dtype=torch.float32).view(torch.int32))
    ranges = [(bits(8.0), bits(32.0))]
    for edge in (64.0, 128.0):
        middle = bits(edge - ratio)
        ranges.append((middle - 2**16, middle + 2**16))
    generator = torch.Generator().manual_seed(0)
    chunks = [torch.arange(lo, hi, dtype=torch.int64) for lo, hi in ranges]
    chunks.append(torch.randint(0, bits(128.0), (2**22,), generator=generator))
    for chunk in torch.cat(chunks).split(2**22):
        square = chunk.to(torch.int32).view(torch.float32)
        w = square + ratio
        assert torch.equal((ratio - w).double(), ratio - w.double())
