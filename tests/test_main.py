"""`python -m gelu_ext`: the demo that the README's first command ends with."""

import subprocess
import sys


def test_python_m_gelu_ext():
    out = subprocess.run([sys.executable, "-m", "gelu_ext", "--numel", "65536"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    for expected in ("gelu_ext ", "torch ", "backends compiled in: CPU", "GPU visible:",
                     "self-check on cpu: passed", "speed-up"):
        assert expected in text, text
