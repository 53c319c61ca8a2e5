"""examples/train.py runs end to end with tiny settings."""

import importlib.util
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_train_example_runs(tmp_path):
    out_png = tmp_path / "curves.png"
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "train.py"), "--seeds", "2",
         "--steps", "20", "--out", str(out_png)],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    text = result.stdout
    table = text[text.index("| activation"):]
    for name in ("gelu_ext none", "gelu_ext tanh", "gelu_ext sigmoid", "nn.GELU", "nn.ReLU",
                 "control"):
        assert f"| {name} " in table, f"{name} missing from the table:\n{text}"
    assert "matches F.gelu to float32 rounding" in text, text
    if importlib.util.find_spec("matplotlib") is not None:
        assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", text
    else:
        assert "matplotlib is not installed" in text and not out_png.exists(), text
