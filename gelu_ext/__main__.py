"""`python -m gelu_ext`: what was built, a quick self-check, and a micro-benchmark against F.gelu.

Exits non-zero if the self-check fails.
"""

import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import gelu_ext
from gelu_ext.ops import APPROXIMATIONS
from gelu_ext.reference import torch_reference


def backends():
    """Backends with kernels registered for the ops, and the CUDA architectures built."""
    try:
        from gelu_ext._build_info import CUDA_ARCHS
    except ImportError:  # running from a source tree that was never built
        CUDA_ARCHS = None
    found = []
    for key in ("CPU", "CUDA"):
        if torch._C._dispatch_has_kernel_for_dispatch_key("gelu_ext::gelu", key):
            found.append(f"CUDA (archs {CUDA_ARCHS})" if key == "CUDA" else key)
    return found


def self_check(device):
    """Forward and backward against independent float64 references (gelu_ext.reference), golden
    values, non-finite inputs."""
    failures = []
    g = torch.Generator().manual_seed(0)
    x64 = (torch.randn(100_000, generator=g, dtype=torch.float64) * 3).to(device)
    for approximate in APPROXIMATIONS:
        # Relative tolerances: a few units of each dtype's rounding.
        for dtype, tol in ((torch.float64, 1e-12), (torch.float32, 3e-7), (torch.bfloat16, 8e-3),
                           (torch.float16, 1e-3)):
            x = x64.to(dtype)
            ref, dref, _ = torch_reference(x, approximate)
            y = gelu_ext.gelu(x, approximate).double()
            # relative to the value, or to the smallest normal number in the subnormal range
            err = ((y - ref).abs() / ref.abs().clamp_min(torch.finfo(dtype).tiny)).max().item()
            if err > tol:
                failures.append(f"{device} {dtype} {approximate}: forward error {err:.2e}")
            x.requires_grad_()
            dx, = torch.autograd.grad(gelu_ext.gelu(x, approximate).sum(), x)
            err = ((dx.double() - dref).abs() / dref.abs().clamp_min(1e-3)).max().item()
            if err > 2 * tol:
                failures.append(f"{device} {dtype} {approximate}: gradient error {err:.2e}")
    golden = {-2.0: -0.0455, -1.0: -0.1587, 1.0: 0.8413, 2.0: 1.9545}
    y = gelu_ext.gelu(torch.tensor(list(golden), device=device))
    if not torch.allclose(y.cpu(), torch.tensor(list(golden.values())), atol=5e-5):
        failures.append(f"{device}: golden values {y.tolist()}")
    special = torch.tensor([float("inf"), -float("inf"), float("nan")], device=device)
    for approximate in APPROXIMATIONS:
        y = gelu_ext.gelu(special, approximate).cpu()
        if not (y[0] == float("inf") and y[1] == 0 and torch.signbit(y[1]) and y[2].isnan()):
            failures.append(f"{device} {approximate}: gelu(inf, -inf, nan) = {y.tolist()}")
    return failures


def median_time(fn, device, repeats=25):
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) * 1e-3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def micro_benchmark(device, numel):
    print(f"  forward, {numel:,} elements, median of 25 (bench/bench.py measures properly):")
    print(f"    {'dtype':<10}{'approximate':<13}{'F.gelu':>10}{'gelu_ext':>10}{'speed-up':>10}")
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(numel, device=device, dtype=dtype)
        for approximate in ("none", "tanh"):
            t_ref = median_time(lambda: F.gelu(x, approximate=approximate), device)
            t_ext = median_time(lambda: gelu_ext.gelu(x, approximate), device)
            print(f"    {str(dtype).split('.')[-1]:<10}{approximate:<13}{t_ref * 1e3:>8.3f}ms"
                  f"{t_ext * 1e3:>8.3f}ms{t_ref / t_ext:>9.2f}x")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m gelu_ext", description=__doc__)
    parser.add_argument("--no-bench", action="store_true", help="skip the micro-benchmark")
    parser.add_argument("--numel", type=int, default=1 << 22, help="benchmark size")
    args = parser.parse_args(argv)

    print(f"gelu_ext {gelu_ext.__version__}")
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda or 'none'})")
    print(f"backends compiled in: {', '.join(backends())}")
    gpu = torch.cuda.is_available()
    print(f"GPU visible: {torch.cuda.get_device_name() if gpu else 'no'}")
    print(f"CPU kernels: {torch.ops.gelu_ext._cpu_isa()}, {torch.get_num_threads()} threads")

    devices = ["cpu"] + (["cuda"] if gpu and "CUDA" in " ".join(backends()) else [])
    ok = True
    for device in devices:
        failures = self_check(device)
        print(f"self-check on {device}: {'passed' if not failures else 'FAILED'}")
        for failure in failures:
            print(f"  {failure}")
        ok &= not failures
        if not args.no_bench:
            micro_benchmark(device, args.numel)
    if not args.no_bench:
        print("full benchmark: python bench/bench.py in the source tree (--quick for a short run); "
              "results per machine in bench/results/, summarized in docs/performance.md")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
