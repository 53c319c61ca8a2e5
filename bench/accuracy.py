"""Accuracy of gelu_ext and F.gelu, side by side, in ulps of the exact value.

For each device x dtype x variant x direction (forward f, backward f' = gelu_backward with
grad 1, second derivative f'' = gelu_double_backward's grad_input with gg = grad = 1) it reports
the largest error, the input where it occurs, and the share of results that are correctly rounded
(error <= 0.5 ulp). Errors are in ulps of the dtype at the exact value (subnormal spacing below the
normal range). Where f' or f'' crosses zero its terms cancel, and the error is measured in ulps of
the larger term instead (gelu_ext.reference.derivative_scales).

Inputs: every value of float16 and bfloat16; for float32 every binade of both signs, a dense
grid over [-20, 20] and the negative tail, or with --exhaustive all 2^32 values; for float64 a
sample of every binade and the tail (and with --float64-random N, 2N random inputs), against
mpmath, with the errors computed in mpmath.

The float64 reference (gelu_ext.reference.torch_reference) is validated against mpmath on
sampled points before it is used.

Baselines: F.gelu for "none" and "tanh" (its backward is aten.gelu_backward, its second
derivative autograd through that); for "sigmoid", the composite x * torch.sigmoid(1.702 x).
With --baseline compile, the same functions compiled by torch.compile, as bench/bench.py times
them: the forward, and the backward that AOTAutograd compiles for it (f' with grad 1).

    python bench/accuracy.py                      # sampled, CPU (and CUDA if visible)
    python bench/accuracy.py --exhaustive --dtypes float32 --directions forward backward
    python bench/accuracy.py --baseline compile --directions forward backward [--within 8]
"""

import argparse
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

import gelu_ext  # noqa: F401
from gelu_ext.reference import (SIGMOID_SCALE, derivative_scales, mp_reference, torch_reference,
                                ulp)

ops = torch.ops.gelu_ext
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "float64": torch.float64}
VARIANTS = ["none", "tanh", "sigmoid"]
DIRECTIONS = ["forward", "backward", "second"]
HERE = os.path.dirname(os.path.abspath(__file__))


# --------------------------------------------------------------------------------------------
# The two implementations.

def ours(x, variant, direction):
    one = torch.ones_like(x)
    if direction == "forward":
        return ops.gelu(x, variant)
    if direction == "backward":
        return ops.gelu_backward(one, x, variant)
    return ops.gelu_double_backward(one, one, x, variant)[1]


def torch_composite(x, variant):
    if variant == "sigmoid":
        return x * torch.sigmoid(float(SIGMOID_SCALE) * x)
    return F.gelu(x, approximate=variant)


def baseline(x, variant, direction):
    """F.gelu (or the sigmoid composite) in x's dtype, differentiated by torch."""
    if direction == "forward":
        return torch_composite(x, variant)
    if direction == "backward" and variant != "sigmoid":
        return torch.ops.aten.gelu_backward(torch.ones_like(x), x, approximate=variant)
    with torch.enable_grad():
        xr = x.detach().requires_grad_()
        (d1,) = torch.autograd.grad(torch_composite(xr, variant).sum(), xr, create_graph=True)
        if direction == "backward":
            return d1.detach()
        (d2,) = torch.autograd.grad(d1.sum(), xr)
    return d2


def compiled_baseline(variant, direction):
    """The baseline's forward (or its f' with grad 1, by the backward graph AOTAutograd compiles
    for it) under torch.compile, as bench/bench.py's "compile" column runs it."""
    forward = torch.compile(lambda x: torch_composite(x, variant))
    if direction == "forward":
        return forward

    def backward(x):
        with torch.enable_grad():
            xr = x.detach().requires_grad_()
            (d1,) = torch.autograd.grad(forward(xr), xr, torch.ones_like(xr))
        return d1
    return backward


# --------------------------------------------------------------------------------------------
# Inputs and errors.

def all_16bit(dtype):
    x = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(dtype)
    return x[x.isfinite()]


def binades(dtype, per_binade, seed=0):
    int_dtype, mantissa_bits, top = {torch.float32: (torch.int32, 23, 254),
                                     torch.float64: (torch.int64, 52, 2046)}[dtype]
    g = torch.Generator().manual_seed(seed)
    exponents = torch.arange(0, top + 1, dtype=torch.int64).repeat_interleave(per_binade)
    mantissas = torch.randint(0, 1 << mantissa_bits, exponents.shape, generator=g)
    positive = ((exponents << mantissa_bits) | mantissas).to(int_dtype).view(dtype)
    return torch.cat([positive, -positive])


def sampled_inputs(dtype, float64_random=0, seed=0):
    if dtype in (torch.float16, torch.bfloat16):
        return all_16bit(dtype)
    if dtype == torch.float32:
        return torch.cat([binades(dtype, 256), torch.linspace(-20, 20, 400001, dtype=dtype),
                          torch.linspace(-70, -5, 200001, dtype=dtype)])
    # float64_random more each over [-40, 40] and [-400, 400]: the exact form's domain and the
    # CPU float64 pair path's (|x| < 20 tanh, < 380 sigmoid).
    g = torch.Generator().manual_seed(seed)
    spread = torch.rand(2 * float64_random, generator=g, dtype=dtype) * 2 - 1
    spread = spread * torch.tensor([40.0, 400.0], dtype=dtype).repeat_interleave(float64_random)
    return torch.cat([binades(dtype, 2)[::4], torch.linspace(-40, 10, 1001, dtype=dtype), spread])


def float32_chunks(chunk_bits=24):
    """All 2^32 float32 values, in chunks of 2^chunk_bits."""
    step = 1 << chunk_bits
    for start in range(0, 1 << 32, step):
        yield torch.arange(start, start + step, dtype=torch.int64).to(torch.int32).view(
            torch.float32)


def error_scale(x, exact, variant, direction):
    """What errors are measured in ulps of: |exact|, or for derivatives the larger term's size."""
    if direction == "forward":
        return exact.abs()
    scale = derivative_scales(x, variant)[DIRECTIONS.index(direction) - 1]
    return torch.maximum(exact.abs(), scale)


def chunk_errors(x, y_mine, y_theirs, variant, direction, dtype):
    """Errors of both implementations at x (inputs of 32 bits or fewer), in ulps, against the
    float64 reference, inf where a result is NaN: one fused pass, compiled, because exhaustive
    float32 runs do this 2^32 times."""
    exact = torch_reference(x, variant)[DIRECTIONS.index(direction)]
    unit = ulp(error_scale(x, exact, variant, direction), dtype)
    return tuple(torch.where(y.isnan(), math.inf, (y.double() - exact).abs() / unit)
                 for y in (y_mine, y_theirs))


def float64_errors(x, y_mine, y_theirs, variant, direction):
    """Errors of float64 results, in ulps, against mpmath, computed in mpmath: the exact value's
    low part is not a float64 where the exact value is subnormal or nearly so."""
    import mpmath as mp

    index = DIRECTIONS.index(direction)
    values = [mp_reference(v, variant)[index] for v in x.cpu().tolist()]
    exact = torch.tensor([float(v) for v in values], dtype=torch.float64)
    units = ulp(error_scale(x.cpu(), exact, variant, direction), torch.float64).tolist()
    errors = []
    with mp.workdps(50):
        for y in (y_mine, y_theirs):
            errors.append(torch.tensor(
                [float(abs(mp.mpf(a) - v) / u) if a == a else math.inf
                 for a, v, u in zip(y.cpu().tolist(), values, units)],
                dtype=torch.float64, device=x.device))
    return errors


_compiled_chunk_errors = torch.compile(chunk_errors, dynamic=True)


class Stats:
    """Running max error (ulps), worst input, and count of correctly rounded results."""

    def __init__(self):
        self.max_err, self.worst, self.correct, self.count = 0.0, math.nan, 0, 0

    def add(self, x, err):
        if err.numel():
            i = int(err.argmax())
            if err[i].item() > self.max_err:
                self.max_err, self.worst = err[i].item(), x[i].item()
        self.correct += int((err <= 0.5).sum())
        self.count += err.numel()

    def row(self):
        share = 100.0 * self.correct / max(self.count, 1)
        return self.max_err, self.worst, share


# --------------------------------------------------------------------------------------------
# Runs.

def run_case(device, dtype, variant, direction, exhaustive, plot_data, float64_random=0,
             compiled=False, within=math.inf):
    mine, theirs = Stats(), Stats()
    theirs_at = (compiled_baseline(variant, direction) if compiled
                 else lambda x: baseline(x, variant, direction))
    chunks = (float32_chunks() if exhaustive and dtype == torch.float32
              else [sampled_inputs(dtype, float64_random)])
    total = (1 << 8) if exhaustive and dtype == torch.float32 else 1
    start = time.time()
    for n, x in enumerate(chunks):
        # Everything on the device: on a GPU the float64 reference is computed there too.
        x = x.to(device)
        x = x[x.isfinite() & (x.abs() <= within)]
        y_mine, y_theirs = ours(x, variant, direction), theirs_at(x)
        if dtype == torch.float64:  # mpmath reference: not compiled
            e_mine, e_theirs = float64_errors(x, y_mine, y_theirs, variant, direction)
        else:
            e_mine, e_theirs = _compiled_chunk_errors(x, y_mine, y_theirs, variant, direction,
                                                      dtype)
        mine.add(x, e_mine)
        theirs.add(x, e_theirs)
        if plot_data is not None and n == 0:
            plot_data[(dtype, variant, direction)] = (x.cpu(), e_mine.cpu(), e_theirs.cpu())
        if total > 1:
            done = (n + 1) / total
            eta = (time.time() - start) / done * (1 - done)
            print(f"\r  {device} {dtype} {variant} {direction}: {100 * done:5.1f}% "
                  f"(eta {eta / 60:4.1f} min)", end="", file=sys.stderr, flush=True)
    if total > 1:
        print(file=sys.stderr)
    return mine.row(), theirs.row(), mine.count


def validate_reference(n=2000):
    """Largest relative difference between the float64 torch reference and mpmath, over sampled
    float32 inputs (binades and the range where the functions vary)."""
    g = torch.Generator().manual_seed(7)
    x = torch.cat([binades(torch.float32, 4), torch.randn(n, generator=g) * 8]).double()
    x = x[(x.abs() < 1e6)]
    worst = 0.0
    for variant in VARIANTS:
        refs = torch_reference(x, variant)
        for i, v in enumerate(x.tolist()):
            exact = mp_reference(v, variant)
            for k in range(3):
                e, r = float(exact[k]), refs[k][i].item()
                if e != 0 and abs(e) > 1e-300:
                    worst = max(worst, abs(r - e) / abs(e))
    return worst, x.numel()


def plot(plot_data, path):
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no picture (pip install matplotlib)")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # float32 and bfloat16 forward, exact and tanh: the panels the README shows.
    keys = [k for k in plot_data if k[0] in (torch.float32, torch.bfloat16)
            and k[1] in ("none", "tanh") and k[2] == "forward"]
    if not keys:
        return
    columns = 2 if len(keys) > 1 else 1
    rows = (len(keys) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 2.7 * rows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        x, e_mine, e_theirs = plot_data[key]
        keep = (x.abs() <= 20)
        x, e_mine, e_theirs = x[keep].double(), e_mine[keep], e_theirs[keep]
        bins = torch.linspace(-20, 20, 201, dtype=torch.float64)
        idx = torch.bucketize(x, bins).clamp(1, 200) - 1
        for err, label in ((e_theirs, "F.gelu"), (e_mine, "gelu_ext")):
            worst = torch.zeros(200, dtype=torch.float64).scatter_reduce(
                0, idx, err.double().clamp_min(1e-3), "amax", include_self=False)
            ax.semilogy((bins[:-1] + 0.1).numpy(), worst.clamp_min(1e-3).numpy(), label=label)
        ax.axhline(0.5, color="gray", lw=0.5, ls="--")
        dtype, variant, direction = key
        name = str(dtype).replace("torch.", "")
        ax.set_title(f"{name}, approximate={variant!r}: largest error per 0.2 of x", fontsize=9)
        ax.set_ylabel("ulps of the exact value", fontsize=8)
        ax.set_xlabel("x", fontsize=8)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    print(f"wrote {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", nargs="+", default=None, help="cpu, cuda (default: all)")
    parser.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=list(DTYPES))
    parser.add_argument("--variants", nargs="+", default=VARIANTS, choices=VARIANTS)
    parser.add_argument("--directions", nargs="+", default=DIRECTIONS, choices=DIRECTIONS)
    parser.add_argument("--exhaustive", action="store_true",
                        help="all 2^32 float32 inputs (in chunks of 2^24, with progress)")
    parser.add_argument("--out", default=os.path.join(HERE, "results"),
                        help="folder for accuracy.md and accuracy.png")
    parser.add_argument("--no-validate", action="store_true",
                        help="skip validating the float64 reference against mpmath")
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG")
    parser.add_argument("--plot", default=None, metavar="PNG",
                        help="where to write the picture (default: accuracy.png in --out; the "
                             "README's is docs/accuracy.png)")
    parser.add_argument("--float64-random", type=int, default=0, metavar="N",
                        help="float64: N more random inputs over each of [-40, 40] and "
                             "[-400, 400] (each costs about 0.3 ms of mpmath)")
    parser.add_argument("--baseline", default="eager", choices=["eager", "compile"],
                        help="PyTorch's functions as they are (default), or under torch.compile "
                             "(forward and backward only)")
    parser.add_argument("--within", type=float, default=math.inf, metavar="R",
                        help="only the inputs with |x| <= R (the bulk, without the tails)")
    args = parser.parse_args()
    if args.baseline == "compile" and "second" in args.directions:
        parser.error("--baseline compile measures the forward and backward: pass --directions "
                     "forward backward")
    devices = args.devices or ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    os.makedirs(args.out, exist_ok=True)

    against = "F.gelu" if args.baseline == "eager" else "F.gelu under torch.compile"
    lines = [f"# Accuracy: gelu_ext against {against} (errors in ulps of the exact value)", "",
             f"Command: `python bench/accuracy.py {' '.join(sys.argv[1:])}`  ",
             f"torch {torch.__version__}, gelu_ext {gelu_ext.__version__}, "
             f"{time.strftime('%Y-%m-%d')}", ""]
    if not args.no_validate:
        worst, n = validate_reference()
        lines += [f"Reference check: the float64 reference differs from mpmath (50 digits) by at "
                  f"most {worst:.2e} relative on {n} sampled float32 inputs, f, f' and f''.", ""]
        print(lines[-2])
    lines += ["| device | dtype | variant | direction | inputs | gelu_ext max ulp | worst x | "
              "gelu_ext correctly rounded | baseline max ulp | worst x | "
              "baseline correctly rounded |", "|" + "---|" * 11]
    plot_data = {}
    t0 = time.time()
    for device in devices:
        for name in args.dtypes:
            dtype = DTYPES[name]
            for variant in args.variants:
                for direction in args.directions:
                    (m_err, m_x, m_cr), (t_err, t_x, t_cr), count = run_case(
                        device, dtype, variant, direction, args.exhaustive, plot_data,
                        args.float64_random, args.baseline == "compile", args.within)
                    row = (f"| {device} | {name} | {variant} | {direction} | {count:,} | "
                           f"{m_err:.3f} | {m_x:.6g} | {m_cr:.4f}% | {t_err:.4g} | {t_x:.6g} | "
                           f"{t_cr:.2f}% |")
                    lines.append(row)
                    print(row, flush=True)
    lines += ["", f"Wall time: {time.time() - t0:.0f} s."]
    suffix = ("_exhaustive" if args.exhaustive else "") + (
        "_compile" if args.baseline == "compile" else "") + (
        f"_within{args.within:g}" if math.isfinite(args.within) else "")
    md = os.path.join(args.out, f"accuracy{suffix}.md")
    with open(md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {md}")
    if not args.no_plot:
        plot(plot_data, args.plot or os.path.join(args.out, f"accuracy{suffix}.png"))


if __name__ == "__main__":
    main()
