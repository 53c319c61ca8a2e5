"""Speed of gelu_ext against F.gelu eager and torch.compile, side by side in one process.

For each device, pass (forward, backward, forward+backward), variant, dtype and size it reports
the median time, the achieved bandwidth, that bandwidth as a share of the copy bandwidth measured
in the same run, and the speed-up of gelu_ext over each baseline.

- Baselines: F.gelu eager and torch.compile(F.gelu) for "none" and "tanh"; for "sigmoid", the
  composite x * torch.sigmoid(1.702 x), eager and compiled. The fused ops against the eager and
  compiled compositions F.gelu(x + b) and F.gelu(gate) * up.
- Passes, as training uses them: forward is f(x) on a tensor without grad; backward is
  torch.autograd.grad of a retained graph (so gelu_ext runs gelu_backward, the baselines their
  own backward kernels); forward+backward builds the graph and differentiates it.
- Bandwidth counts the fewest bytes that must move: forward reads x and writes y; backward reads
  x and grad and writes dx; forward+backward is the sum. The copy bandwidth is that of
  y.copy_(x) on a large tensor, bytes read plus bytes written.
- Method: warm-up (3 rounds, or as long as one implementation's budget), then repeated calls
  timed one by one (host clock on the CPU, CUDA events on the GPU), medians reported. gelu_ext
  and its baselines take turns, a call each per round, so that drift in the machine's speed
  affects them alike. Inputs rotate among enough buffers to exceed --rotate-mb, so that caches
  do not flatter small sizes.
- GPU: a call timed alone starts on an idle GPU, so its time includes the host's work to
  launch its kernels (Python, the dispatcher, the launches), which at a few MB takes longer than
  the kernels. The "graph" columns time the kernels alone: up to 8 calls, on as many input sets,
  captured in a CUDA graph and replayed back to back (implementations that cannot be captured
  show n/a).
- Data: x (and the bias, and geglu's gate and up) from N(0, sigma^2), sigma = 2 unless --sigma
  says otherwise; output gradients from N(0, 1). F.gelu's speed does not depend on the values;
  gelu_ext's 16-bit kernels redo the few elements whose fast result they cannot round, so theirs
  does a little.

- Memory (CPU): by default glibc returns large freed blocks to the system, so each call's
  fresh outputs are page-faulted in as they are written, which at 32 MB takes longer than the
  GELU itself on some machines. That is what a training step pays, and what the default run
  measures. gelu_ext's CPU ops ask Linux for transparent huge pages for their own outputs
  (2 MB pages fault 512 times less often; GELU_EXT_HUGE_PAGES=0 turns that off), which the
  baselines' outputs do not get by default. --huge-pages restarts the run with PyTorch asking for
  them on every allocation (THP_MEM_ALLOC_ENABLE=1), which puts the baselines on the same footing.
  --steady restarts it with glibc keeping freed memory (MALLOC_MMAP_THRESHOLD_ and
  MALLOC_TRIM_THRESHOLD_ raised), so that outputs reuse mapped pages: the kernels' own speed.

    python bench/bench.py --quick                 # a short run
    python bench/bench.py --device cpu --dtypes float32 bfloat16 --sizes 22 24
    python bench/bench.py --device cpu --steady   # without page faults of fresh outputs
    python bench/bench.py --device cpu --huge-pages   # every output in 2 MB pages
Writes bench/results/bench_<device>_<machine>_<kernels>[_steady].{md,csv,png}, one set per
machine and mode.
"""

import argparse
import csv
import itertools
import math
import os
import platform
import re
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import gelu_ext

HERE = os.path.dirname(os.path.abspath(__file__))
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
          "float64": torch.float64}
VARIANTS = ["none", "tanh", "sigmoid"]
PASSES = ["forward", "backward", "forward+backward"]
TRANSFORMER_SHAPES = [(8192, 3072)]
FUSED_SHAPES = [(4096, 2048), (4096, 4096)]
# Settings read at start-up, by glibc (--steady: freed blocks up to 4 GB stay mapped in the
# process) and by PyTorch's CPU allocator (--huge-pages), with how the report describes them.
MEMORY_MODES = {
    "steady": ({"MALLOC_MMAP_THRESHOLD_": "4000000000", "MALLOC_TRIM_THRESHOLD_": "4000000000"},
               "freed memory kept (--steady): outputs are not page-faulted in"),
    "huge_pages": ({"THP_MEM_ALLOC_ENABLE": "1"},
                   "every PyTorch allocation asks for transparent huge pages (--huge-pages)"),
}


def memory_mode():
    """The mode of MEMORY_MODES this process runs in, or None for the defaults."""
    for mode, (env, _) in MEMORY_MODES.items():
        if all(os.environ.get(k) == v for k, v in env.items()):
            return mode
    return None


def describe_memory():
    mode = memory_mode()
    if mode is not None:
        return MEMORY_MODES[mode][1]
    return ("glibc defaults: large fresh outputs are page-faulted in as they are written "
            "(gelu_ext's in 2 MB pages where Linux grants them)")


def gelu_eager(variant):
    if variant == "sigmoid":
        return lambda x: x * torch.sigmoid(1.702 * x)
    return lambda x: F.gelu(x, approximate=variant)


class Op:
    """What is timed: the inputs a training step differentiates (`leaves`), the forward of each
    implementation as a function of them, and the fewest bytes each pass must move."""

    def __init__(self, name, leaves, gelu_ext_fn, eager_fn, elements_moved):
        self.name, self.leaves = name, leaves
        self.gelu_ext_fn, self.eager_fn = gelu_ext_fn, eager_fn
        self.elements_moved = elements_moved  # pass -> elements read + written, per output element

    def implementations(self):
        # Compiled with dynamic shapes: once per dtype and variant rather than once per size.
        torch._dynamo.config.cache_size_limit = 1024
        return {"gelu_ext": self.gelu_ext_fn, "eager": self.eager_fn,
                "compile": torch.compile(self.eager_fn, dynamic=True)}


def make_op(name, variant, shape, dtype, device, g, sigma):
    randn = lambda *sh: (torch.randn(sh, generator=g, device=device) * sigma).to(dtype)  # noqa: E731
    eager = gelu_eager(variant)
    if name == "gelu":
        return Op(name, [randn(*shape)], lambda x: gelu_ext.gelu(x, variant), eager,
                  {"forward": 2, "backward": 3, "forward+backward": 5})
    if name == "bias_gelu":  # the bias is read once per row: not counted
        return Op(name, [randn(*shape), randn(shape[-1])],
                  lambda x, b: gelu_ext.bias_gelu(x, b, variant), lambda x, b: eager(x + b),
                  {"forward": 2, "backward": 3, "forward+backward": 5})
    if name == "geglu":  # h = [gate, up] of twice the output's width, split without copies
        def ours(h):
            return gelu_ext.geglu_packed(h, variant)

        def theirs(h):
            gate, up = h.chunk(2, dim=-1)
            return eager(gate) * up
        return Op(name, [randn(*shape[:-1], 2 * shape[-1])], ours, theirs,
                  {"forward": 3, "backward": 5, "forward+backward": 8})
    raise ValueError(name)


class Timer:
    def __init__(self, device, budget_s=0.6):
        self.device, self.budget_s = device, budget_s

    def medians(self, fns, min_reps=7, max_reps=60, budget_s=None):
        """Median seconds of each fn(i), after warm-up.

        The functions take turns, one call each per round, so that a machine whose speed drifts
        (a shared or virtual one) slows them alike and their ratios stay fair. i counts up across
        all calls, so each call takes the next input set and never finds its inputs cached by the
        call before it.
        """
        turn = itertools.count()
        share_s = self.budget_s if budget_s is None else budget_s  # each implementation's
        # At least 3 rounds, and up to one implementation's share of the budget: a fresh process
        # may take several calls to reach its steady state (on a virtual machine, new huge pages
        # run 3-4 times slower for the first few calls, until freed ones come back).
        warm_until = time.perf_counter() + share_s
        rounds = 0
        while rounds < 3 or (rounds < 20 and time.perf_counter() < warm_until):
            for fn in fns.values():
                fn(next(turn))
            rounds += 1
        self.sync()
        times = {name: [] for name in fns}
        start = time.perf_counter()
        rounds = 0
        while rounds < min_reps or (rounds < max_reps
                                    and time.perf_counter() - start < share_s * len(fns)):
            for name, fn in fns.items():
                times[name].append(self.time_call(fn, next(turn)))
            rounds += 1
        return {name: statistics.median(t) for name, t in times.items()}

    def time_call(self, fn, i):
        if self.device == "cuda":
            begin = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            begin.record()
            fn(i)
            end.record()
            end.synchronize()
            return begin.elapsed_time(end) * 1e-3
        t0 = time.perf_counter()
        fn(i)
        return time.perf_counter() - t0

    def sync(self):
        if self.device == "cuda":
            torch.cuda.synchronize()

    def graph_medians(self, make_calls, calls, replays=15):
        """CUDA: median seconds per call of each fn(i) of make_calls(), i = 0 .. calls - 1,
        replayed from a CUDA graph: the GPU's time for the kernels alone, back to back, without
        the host's time to launch them (which time_call includes). The calls are made, warmed up
        and captured on one side stream, so that the kernels of a backward run where the capture
        is. None for an implementation whose calls cannot be captured (the error is printed).
        The implementations take turns, one replay each."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        graphs = {}
        with torch.cuda.stream(side):
            fns = make_calls()
            for name, fn in fns.items():
                try:
                    for i in range(calls):  # warm-up off the default stream, as capture asks
                        fn(i)
                    side.synchronize()
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph, stream=side):
                        for i in range(calls):
                            fn(i)
                    graph.replay()
                    graphs[name] = graph
                except Exception as error:  # noqa: BLE001: a failure leaves this column empty
                    print(f"# {name}: no CUDA graph ({type(error).__name__}: {error})",
                          file=sys.stderr)
                torch.cuda.synchronize()
        times = {name: [] for name in graphs}
        for _ in range(replays):
            for name, graph in graphs.items():
                begin = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                begin.record()
                graph.replay()
                end.record()
                end.synchronize()
                times[name].append(begin.elapsed_time(end) * 1e-3 / calls)
        del graphs, fns
        torch.cuda.synchronize()
        return {name: statistics.median(times[name]) if name in times else None
                for name in ("gelu_ext", "eager", "compile")}


def copy_bandwidth(device, timer, nbytes=1 << 28):
    x = torch.empty(nbytes // 4, dtype=torch.float32, device=device).uniform_()
    y = torch.empty_like(x)
    t = timer.medians({"copy": lambda i: y.copy_(x)}, min_reps=5, max_reps=20)["copy"]
    return 2 * nbytes / t


def input_sets(op_name, variant, shape, dtype, device, rotate_bytes, sigma):
    """Several independent input sets, enough to exceed rotate_bytes, each with its output grad."""
    g = torch.Generator(device=device).manual_seed(0)
    sets, total = [], 0
    while not sets or (total < rotate_bytes and len(sets) < 64):
        op = make_op(op_name, variant, shape, dtype, device, g, sigma)
        grad = (torch.randn(shape, generator=g, device=device)).to(dtype)
        sets.append((op, grad))
        total += sum(t.numel() * t.element_size() for t in op.leaves) + grad.numel() * grad.element_size()
    return sets


def pass_calls(pass_name, sets):
    """The calls to time of one pass, fn(i) for each implementation (the keys of
    Op.implementations), i choosing the input set. The backward alone differentiates graphs
    built here, on the current stream, where its kernels then run."""
    fns = sets[0][0].implementations()
    pick = lambda items, i: items[i % len(items)]  # noqa: E731: rotate among the input sets
    if pass_name == "forward":
        return {impl: (lambda i, fn=fn: fn(*pick(sets, i)[0].leaves)) for impl, fn in fns.items()}
    if pass_name == "forward+backward":
        def forward_backward(i, fn):
            op, grad = pick(sets, i)
            leaves = [t.detach().requires_grad_() for t in op.leaves]
            return torch.autograd.grad(fn(*leaves), leaves, grad)
        return {impl: (lambda i, fn=fn: forward_backward(i, fn)) for impl, fn in fns.items()}

    def graphs(fn):  # backward alone: autograd.grad through graphs built once, retained
        built = []
        for op, grad in sets:
            leaves = [t.detach().requires_grad_() for t in op.leaves]
            built.append((fn(*leaves), leaves, grad))
        return built

    def backward(i, built):
        y, leaves, grad = pick(built, i)
        return torch.autograd.grad(y, leaves, grad, retain_graph=True)
    return {impl: (lambda i, built=graphs(fn): backward(i, built)) for impl, fn in fns.items()}


def time_passes(timer, pass_name, sets):
    """Median time of one pass for each implementation; on the GPU also (as "<impl>_graph") its
    kernels' time, replayed from a CUDA graph of up to 8 calls (each keeps its outputs in the
    graph's memory) on as many input sets."""
    times = timer.medians(pass_calls(pass_name, sets))
    if timer.device == "cuda":
        device = timer.graph_medians(lambda: pass_calls(pass_name, sets), min(len(sets), 8))
        times.update({f"{impl}_graph": t for impl, t in device.items()})
    return times


def run(args):
    device = args.device
    timer = Timer(device, args.budget)
    rows = []
    copy_bw = copy_bandwidth(device, timer)
    cases = []
    for op_name in args.ops:
        shapes = ([(1 << s,) for s in args.sizes] + ([] if args.quick else TRANSFORMER_SHAPES)
                  if op_name == "gelu" else FUSED_SHAPES)
        cases += [(op_name, p, v, d, s) for p in args.passes for v in args.variants
                  for d in args.dtypes for s in shapes]
    print(f"# {device}: copy bandwidth {copy_bw / 1e9:.1f} GB/s; {len(cases)} cases",
          file=sys.stderr)
    print(f"{'op':<10}{'pass':<17}{'variant':<8}{'dtype':<9}{'shape':>13}{'gelu_ext':>10}"
          f"{'eager':>10}{'compile':>10}{'GB/s':>8}{'%copy':>7}{'vs eager':>9}{'vs compile':>11}")
    for n, (op_name, pass_name, variant, dtype_name, shape) in enumerate(cases, 1):
        dtype = DTYPES[dtype_name]
        sets = input_sets(op_name, variant, shape, dtype, device, args.rotate_mb << 20, args.sigma)
        times = time_passes(timer, pass_name, sets)
        numel = math.prod(shape)
        moved = sets[0][0].elements_moved[pass_name] * numel * torch.finfo(dtype).bits // 8
        bw = moved / times["gelu_ext"]
        row = dict(device=device, op=op_name, pass_=pass_name, variant=variant, dtype=dtype_name,
                   shape="x".join(map(str, shape)), numel=numel,
                   gelu_ext_ms=times["gelu_ext"] * 1e3, eager_ms=times["eager"] * 1e3,
                   compile_ms=times["compile"] * 1e3, gelu_ext_gbps=bw / 1e9,
                   eager_gbps=moved / times["eager"] / 1e9,
                   compile_gbps=moved / times["compile"] / 1e9,
                   pct_copy=100 * bw / copy_bw, vs_eager=times["eager"] / times["gelu_ext"],
                   vs_compile=times["compile"] / times["gelu_ext"])
        if device == "cuda":
            graph = {impl: times[f"{impl}_graph"] for impl in ("gelu_ext", "eager", "compile")}
            ratio = lambda a, b: a / b if a and b else float("nan")  # noqa: E731
            row.update(gelu_ext_graph_ms=(graph["gelu_ext"] or float("nan")) * 1e3,
                       graph_pct_copy=ratio(100 * moved / copy_bw, graph["gelu_ext"]),
                       graph_vs_eager=ratio(graph["eager"], graph["gelu_ext"]),
                       graph_vs_compile=ratio(graph["compile"], graph["gelu_ext"]))
        rows.append(row)
        print(f"{op_name:<10}{pass_name:<17}{variant:<8}{dtype_name:<9}{row['shape']:>13}"
              f"{row['gelu_ext_ms']:>9.3f}m{row['eager_ms']:>9.3f}m{row['compile_ms']:>9.3f}m"
              f"{row['gelu_ext_gbps']:>8.1f}{row['pct_copy']:>6.0f}%{row['vs_eager']:>8.2f}x"
              f"{row['vs_compile']:>10.2f}x" + (
                  f"   graph: {row['gelu_ext_graph_ms']:.3f}m {row['graph_pct_copy']:.0f}% "
                  f"{row['graph_vs_eager']:.2f}x {row['graph_vs_compile']:.2f}x"
                  if device == "cuda" else "") + f"   [{n}/{len(cases)}]", flush=True)
    return rows, copy_bw


def cpu_name():
    """The CPU's model name, with its family and model numbers where /proc/cpuinfo has them (a
    virtual machine's model name may not say the generation: AMD family 25 model 1 is Zen 3,
    model 17 Zen 4)."""
    name, numbers = platform.processor() or platform.machine(), {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "model name":
                    name = value
                elif key in ("cpu family", "model") and key not in numbers:
                    numbers[key] = value
                if not line.strip():
                    break  # the first processor is enough
    except OSError:
        pass
    if len(numbers) == 2:
        name += f" (family {numbers['cpu family']}, model {numbers['model']})"
    return name


def describe_machine(device):
    if device == "cuda":
        return torch.cuda.get_device_name()
    return (f"{cpu_name()}, {os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads, "
            f"gelu_ext CPU kernels: {torch.ops.gelu_ext._cpu_isa()}")


def results_name(args):
    """bench_<device>_<machine>_<kernels>[_steady|_huge-pages]: one file per machine and mode."""
    if args.device == "cuda":
        machine = torch.cuda.get_device_name()
    else:
        machine = f"{cpu_name()}_{torch.ops.gelu_ext._cpu_isa()}"
    slug = re.sub(r"[^a-z0-9]+", "-", machine.lower()).strip("-")
    mode = "_steady" if args.steady else "_huge-pages" if args.huge_pages else ""
    return f"bench_{args.device}_{slug}{mode}"


def write_outputs(rows, copy_bw, args):
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, results_name(args))
    with open(base + ".csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = [f"# gelu_ext speed, {args.device}", "",
             f"- date: {time.strftime('%Y-%m-%d %H:%M')}",
             f"- machine: {describe_machine(args.device)}",
             f"- torch {torch.__version__}, gelu_ext {gelu_ext.__version__}",
             f"- command: `python bench/bench.py {' '.join(sys.argv[1:])}`",
             f"- copy bandwidth (read + write): {copy_bw / 1e9:.1f} GB/s",
             "- memory: " + describe_memory(),
             f"- data: N(0, {args.sigma:g}^2)", "",
             "Times are medians in ms; speed-up = baseline time / gelu_ext time; bandwidth counts "
             "the fewest bytes each pass must move."]
    header = ("| op | pass | variant | dtype | shape | gelu_ext ms | eager ms | compile ms | "
              "gelu_ext GB/s | % of copy | vs eager | vs compile |")
    cuda = args.device == "cuda"
    if cuda:
        lines += ["", "On the GPU, each call is timed from an idle GPU, so its time includes the "
                  "host's work to launch it; the graph columns replay up to 8 calls from a CUDA "
                  "graph: the kernels' own time, back to back."]
        header += " graph: gelu_ext ms | graph: % of copy | graph: vs eager | graph: vs compile |"
    lines += ["", header, "|" + "---|" * (16 if cuda else 12)]
    for r in rows:
        line = (f"| {r['op']} | {r['pass_']} | {r['variant']} | {r['dtype']} | {r['shape']} | "
                f"{r['gelu_ext_ms']:.3f} | {r['eager_ms']:.3f} | {r['compile_ms']:.3f} | "
                f"{r['gelu_ext_gbps']:.1f} | {r['pct_copy']:.0f}% | {r['vs_eager']:.2f}x | "
                f"{r['vs_compile']:.2f}x |")
        if cuda:
            shown = lambda v, form: "n/a" if math.isnan(v) else form.format(v)  # noqa: E731
            line += (f" {shown(r['gelu_ext_graph_ms'], '{:.3f}')} | "
                     f"{shown(r['graph_pct_copy'], '{:.0f}%')} | "
                     f"{shown(r['graph_vs_eager'], '{:.2f}x')} | "
                     f"{shown(r['graph_vs_compile'], '{:.2f}x')} |")
        lines.append(line)
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    plotted = False
    if not args.no_plot:
        try:
            plot(rows, copy_bw, base + ".png")
            plotted = True
        except ImportError:
            print("no plot: matplotlib is not installed (pip install matplotlib)", file=sys.stderr)
    print(f"wrote {base}.md and .csv" + (", .png" if plotted else ""), file=sys.stderr)


def plot(rows, copy_bw, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r["op"] == "gelu"]  # bandwidth against size: the gelu sizes
    if not rows:
        return
    keys = sorted({(r["pass_"], r["variant"], r["dtype"]) for r in rows},
                  key=lambda k: (PASSES.index(k[0]), VARIANTS.index(k[1]), k[2]))
    cols = 3
    nrows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.2 * nrows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        sel = sorted((r for r in rows if (r["pass_"], r["variant"], r["dtype"]) == key
                      and "x" not in r["shape"]), key=lambda r: r["numel"])
        for impl in ("gelu_ext", "eager", "compile"):
            ax.plot([r["numel"] for r in sel], [r[f"{impl}_gbps"] for r in sel], marker="o",
                    ms=3, label=impl)
        ax.axhline(copy_bw / 1e9, color="gray", ls="--", lw=0.8, label="copy")
        ax.set_xscale("log", base=2)
        ax.set_title(" / ".join(key), fontsize=9)
        ax.set_xlabel("elements")
        ax.set_ylabel("GB/s")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--ops", nargs="+", default=["gelu", "bias_gelu", "geglu"],
                        choices=["gelu", "bias_gelu", "geglu"],
                        help="bias_gelu and geglu are compared with their eager compositions")
    parser.add_argument("--passes", nargs="+", default=PASSES, choices=PASSES)
    parser.add_argument("--variants", nargs="+", default=VARIANTS, choices=VARIANTS)
    parser.add_argument("--dtypes", nargs="+", default=None, choices=list(DTYPES),
                        help="default: all (with --quick: float32 bfloat16)")
    parser.add_argument("--sizes", nargs="+", type=int, default=None,
                        help="log2 of the element counts (default 10 12 ... 26)")
    parser.add_argument("--rotate-mb", type=int, default=None,
                        help="rotate inputs over at least this many MB (default 256 CPU, 1024 GPU)")
    parser.add_argument("--quick", action="store_true",
                        help="a short run: sizes 2^16 and 2^22, float32 and bfloat16, budget 0.1 s")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds of repetitions per implementation and case, at least 7 runs "
                             "(default 0.6)")
    parser.add_argument("--steady", action="store_true",
                        help="CPU: rerun with glibc keeping freed memory, so that fresh outputs "
                             "are not page-faulted in (see Memory above)")
    parser.add_argument("--huge-pages", action="store_true",
                        help="CPU: rerun with PyTorch asking for huge pages on every allocation, "
                             "as gelu_ext does for its outputs (see Memory above)")
    parser.add_argument("--sigma", type=float, default=2.0,
                        help="standard deviation of the inputs (see Data above; default 2)")
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args()
    if args.steady and args.huge_pages:
        parser.error("--steady and --huge-pages are two different memory settings: choose one")
    if not args.sigma > 0:
        parser.error(f"--sigma must be positive, got {args.sigma}")
    wanted = "steady" if args.steady else "huge_pages" if args.huge_pages else None
    if wanted is not None and memory_mode() != wanted:
        # The settings take effect only at start-up: run this script again with them.
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__)] + sys.argv[1:],
                  {**os.environ, **MEMORY_MODES[wanted][0]})
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.sizes is None:
        args.sizes = [16, 22] if args.quick else list(range(10, 27, 2))
    if args.dtypes is None:
        args.dtypes = ["float32", "bfloat16"] if args.quick else list(DTYPES)
    if args.budget is None:
        args.budget = 0.1 if args.quick else 0.6
    if args.rotate_mb is None:
        args.rotate_mb = 1024 if args.device == "cuda" else 256
    print(f"# {describe_machine(args.device)}; torch {torch.__version__}; data N(0, "
          f"{args.sigma:g}^2); memory: " + describe_memory(), file=sys.stderr)
    rows, copy_bw = run(args)
    write_outputs(rows, copy_bw, args)


if __name__ == "__main__":
    main()
