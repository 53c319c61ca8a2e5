"""csrc/math/coefficients.inc states each polynomial's interval and largest error: re-measured
against mpmath from the stored coefficients, every stated error must hold (to the 0.1 in log2 it
is printed with) and lie below what the paths' error analyses require, and the file must be the
generator's own rendering (no coefficient edited by hand)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_coefficients_match_their_stated_errors():
    pytest.importorskip("mpmath")
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "fit_polynomials.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
