"""Predicts how fast gelu_ext's CUDA kernels run on named GPUs, from their machine code alone.

Each kernel is compiled for each architecture as setup.py builds it, and so is a stand-in for
PyTorch's own F.gelu kernels (bench/fgelu_standin.cu). bench/sass_report.py counts each main
loop per element: instructions issued and operations of each pipe. A GPU then runs a kernel at
the pace of its slowest resource: memory at 90% of its datasheet bandwidth, or one of the SM's
pipes at its rate per SM and clock, times SMs and boost clock. The model prints, per GPU, dtype,
form and pass: the share of copy bandwidth (a copy moving the same bytes takes that share of the
predicted time), the limiting resource, and the predicted time over the F.gelu stand-in's.

    python bench/gpu_model.py                        # every GPU; writes bench/results/gpu_model.md
    python bench/gpu_model.py --gpus A100,H200       # some GPUs (stdout only)
    python bench/gpu_model.py --arch sm_86 --counts  # the GPUs of one architecture, with counts
    python bench/gpu_model.py --arch sm_100 --define GELU_ROUTE_CUDA_F32_VIA_F32  # another path

What it leaves out: latency (each kernel is assumed to keep enough warps in flight), caches,
the launch and tail of a kernel, clocks below boost, and dual issue. It is a bound by the
slowest resource, not a simulation; measured speed belongs to bench/bench.py on a GPU.
The first run compiles 12 cubins (about 30 s each on one core; --jobs in parallel); they are
kept in the temporary directory under a digest of the sources and flags.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_report  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN_SOURCE = os.path.join(HERE, "fgelu_standin.cu")
# PyTorch builds ATen with nvcc's default contraction (--fmad=true), unlike gelu_ext.
STANDIN_FLAGS = ("-O3", "-std=c++17", "--expt-relaxed-constexpr")
DEFAULT_OUT = os.path.join(HERE, "results", "gpu_model.md")

# Per SM and clock, in lanes (one warp instruction uses 32). Sources:
# [PG] CUDA C++ Programming Guide, "Compute Capabilities", sections "Compute Capability 8.x"
#      and "9.0": an SM has 4 warp schedulers (4 x 32 = 128 issue lanes), 64 FP32 cores (8.0) or
#      128 (8.6, 8.9, 9.0), 32 FP64 cores (8.0), 2 (8.6, 8.9) or 64 (9.0), 64 INT32 cores and
#      16 special function units.
#      https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#compute-capabilities
# [BPG] CUDA C++ Best Practices Guide 13.0, 12.1.1 "Throughput of Native Arithmetic
#      Instructions" (the table the Programming Guide held until CUDA 12.9), results per clock
#      per SM: 32-bit floating-point add/multiply/multiply-add 64 (8.0), 128 (8.6, 8.9, 9.0,
#      10.0, 12.0); 64-bit 32 (8.0), 2 (8.6, 8.9, 12.0), 64 (9.0, 10.0); reciprocal, reciprocal
#      square root, log2, exp2, sine, cosine 16; type conversions 16; 32-bit integer add,
#      compare, shift, bitwise 64.
#      https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/#throughput-of-native-arithmetic-instructions
# IMAD counts on the FP32 pipe, whose FMA unit runs it; FP32-to-16-bit conversions (F2FP) count
# as conversions at 16 lanes, though Nsight Compute places FP32-to-FP16 conversion on the ALU on
# 8.x: of two readings, the slower.
ARCH_RATES = {
    #          issue [PG]  fp64 [PG,BPG]  fp32 [PG,BPG]  mufu [PG,BPG]  convert [BPG]  alu [PG,BPG]
    "sm_80": dict(issue=128, fp64=32, fp32=64, mufu=16, convert=16, alu=64),
    "sm_86": dict(issue=128, fp64=2, fp32=128, mufu=16, convert=16, alu=64),
    "sm_89": dict(issue=128, fp64=2, fp32=128, mufu=16, convert=16, alu=64),
    "sm_90": dict(issue=128, fp64=64, fp32=128, mufu=16, convert=16, alu=64),
    "sm_100": dict(issue=128, fp64=64, fp32=128, mufu=16, convert=16, alu=64),
    "sm_120": dict(issue=128, fp64=2, fp32=128, mufu=16, convert=16, alu=64),
}

# Resident threads per SM [PG, "Compute Capabilities", Table "Technical Specifications per Compute
# Capability"]: 2048 on 8.0, 9.0 and 10.0, 1536 on 8.6, 8.9 and 12.0; 64K 32-bit registers per
# SM on each, allocated per warp in units of 256 (8 per thread).
MAX_THREADS_PER_SM = {"sm_80": 2048, "sm_86": 1536, "sm_89": 1536, "sm_90": 2048, "sm_100": 2048,
                      "sm_120": 1536}
BLOCK_THREADS = 256  # gelu_cuda.cu's kBlockSize


def resident_blocks(arch, registers):
    """Blocks of gelu_ext's kernels that an SM holds at once, by threads and registers (their
    shared memory, at most 8 KB a block, limits none): the grid of one wave is this times the
    SMs, as the launches ask cudaOccupancyMaxActiveBlocksPerMultiprocessor."""
    per_thread = -(-registers // 8) * 8
    return min(MAX_THREADS_PER_SM[arch] // BLOCK_THREADS, 65536 // (BLOCK_THREADS * per_thread))


# name: (architecture, SMs, boost clock in Hz, datasheet memory bandwidth in bytes/s).
GPUS = {
    # NVIDIA A100 Tensor Core GPU Architecture whitepaper, Table 3: 108 SMs, boost 1410 MHz;
    # A100 datasheet: 2,039 GB/s (80 GB SXM).
    "A100": ("sm_80", 108, 1.410e9, 2039e9),
    # NVIDIA A10 datasheet: 9,216 CUDA cores (72 SMs of 128), 31.2 TFLOPS FP32 (boost 1695
    # MHz), 600 GB/s.
    "A10": ("sm_86", 72, 1.695e9, 600e9),
    # NVIDIA L4 datasheet: 7,424 CUDA cores (58 SMs), 30.3 TFLOPS FP32 (boost 2040 MHz),
    # 300 GB/s.
    "L4": ("sm_89", 58, 2.040e9, 300e9),
    # NVIDIA L40S datasheet: 18,176 CUDA cores (142 SMs), 91.6 TFLOPS FP32 (boost 2520 MHz),
    # 864 GB/s.
    "L40S": ("sm_89", 142, 2.520e9, 864e9),
    # NVIDIA Ada GPU Architecture whitepaper, Appendix A, GeForce RTX 4090: 128 SMs, boost
    # 2520 MHz, 1,008 GB/s.
    "RTX 4090": ("sm_89", 128, 2.520e9, 1008e9),
    # NVIDIA H100 Tensor Core GPU Architecture whitepaper, Table 3: H100 SXM5 132 SMs, 67
    # TFLOPS FP32 (boost 1980 MHz); H100 datasheet: 3.35 TB/s (SXM).
    "H100": ("sm_90", 132, 1.980e9, 3.35e12),
    # NVIDIA H200 datasheet: 4.8 TB/s; the same GH100 configuration as H100 SXM5.
    "H200": ("sm_90", 132, 1.980e9, 4.8e12),
    # NVIDIA DGX B200 datasheet: 64 TB/s HBM3e for 8 GPUs (8 TB/s each); 148 SMs, boost 1.98
    # GHz, 75 TFLOPS FP32 (hmc-tech.com/gpus/nvidia-b200-vs-nvidia-b100, TechPowerUp).
    "B200": ("sm_100", 148, 1.980e9, 8.0e12),
    # NVIDIA RTX Blackwell GPU Architecture whitepaper, Table 3, GeForce RTX 5090: 170 SMs,
    # boost 2407 MHz, 1,792 GB/s.
    "RTX 5090": ("sm_120", 170, 2.407e9, 1792e9),
}
MEMORY_EFFICIENCY = 0.9  # share of the datasheet bandwidth a copy kernel reaches

DTYPES = ("float32", "bfloat16", "float16", "float64")
SIZES = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8}
VARIANTS = ("none", "tanh", "sigmoid")
PASSES = ("forward", "backward")
FUSED = ("bias_gelu", "bias_gelu backward", "geglu", "geglu backward")
# The narrow path of 16-bit data leaves an element to its fallback where its rounding test fails;
# the kernels queue such vectors per warp and redo 32 at a time. bench/narrow_fallback.cpp replays
# that queue on normal data of standard deviation --sigma, per pass, form and dtype.
FALLBACK_SOURCE = os.path.join(HERE, "narrow_fallback.cpp")
FALLBACK_SAMPLES = 1 << 18
UNFUSED_NOTE = """Eager equivalents: bias_gelu is t = x + b (2 elements moved) then F.gelu(t); its
backward F.gelu's backward of (grad, t) then the bias gradient's sum (1 element read, which
gelu_ext runs after its kernel too); geglu is a = F.gelu(gate) then a * up (3); its backward
grad * up and grad * a (3 each) then F.gelu's backward of (grad * up, gate). The elementwise
kernels around F.gelu are taken at the copy bandwidth."""


# narrow_fallback.cpp's columns: shares of elements, then weights per warp round.
FALLBACK_FIELDS = ("unsure", "settling", "doubled", "queueing_rounds", "redos", "iterations",
                   "settling_iterations", "double_iterations")


# The elements of a lane's queue entry (narrow_fallback.cpp's kEntryElements): two vectors of 8.
ENTRY_ELEMENTS = 16


def assumed_fallback(rate):
    """narrow_fallback.cpp's figures for elements that fail independently at `rate`: a warp
    round queues if any of its 32 lanes' entries has one, a redo every 32 such entries, one
    iteration each, and every element on to the double path."""
    entry = 1 - (1 - rate) ** ENTRY_ELEMENTS
    return dict(unsure=rate, settling=rate, doubled=rate, queueing_rounds=1 - (1 - entry) ** 32,
                redos=entry, iterations=entry, settling_iterations=entry,
                double_iterations=entry)


def measured_fallback(sigma):
    """{(pass, variant, dtype): {field: value}} (FALLBACK_FIELDS) from bench/narrow_fallback.cpp,
    kept in the cache like the cubins."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        sys.exit("gpu_model: no C++ compiler for bench/narrow_fallback.cpp (or give "
                 "--fallback-rate)")
    # GELU_DEVICE_FORMS: the narrow path's GPU forms and rounding test (math/narrow16.h).
    flags = ("-O2", "-std=c++17", "-mf16c", "-ffp-contract=off", "-DGELU_DEVICE_FORMS", cxx,
             FALLBACK_SAMPLES, sigma)
    base = os.path.join(sass_report.cache_dir(),
                        "fallback-" + sass_report.source_digest(FALLBACK_SOURCE, flags))
    if not os.path.exists(base + ".tsv"):
        subprocess.run([cxx, *flags[:5], "-I", os.path.join(sass_report.ROOT, "csrc"),
                        FALLBACK_SOURCE, "-o", base + ".bin"], check=True)
        text = subprocess.run([base + ".bin", str(FALLBACK_SAMPLES), str(sigma)], check=True,
                              capture_output=True, text=True).stdout
        with open(base + ".tsv.partial", "w") as f:
            f.write(text)
        os.replace(base + ".tsv.partial", base + ".tsv")
    rates = {}
    with open(base + ".tsv") as f:
        for line in f:
            pass_name, variant, dtype, *shares = line.rstrip("\n").split("\t")
            rates[(pass_name, variant, dtype)] = dict(zip(FALLBACK_FIELDS, map(float, shares)))
    return rates


def standin_counts(cubin):
    """Per-element counts of the F.gelu stand-in kernels: {(pass, variant, dtype): counts}. Each
    thread handles 8 elements in straight-line code and exits."""
    passes, variants = {"0": "forward", "1": "backward"}, dict(enumerate(VARIANTS))
    types = {"f": "float32", "d": "float64", "6__half": "float16", "13__nv_bfloat16": "bfloat16"}
    out = {}
    for name, instructions in sass_report.kernels(cubin):
        m = re.search(r"gelu_standinILi(\d)ELi(\d)E(f|d|6__half|13__nv_bfloat16)E", name)
        if not m:
            continue
        body = sass_report.hot_path(sass_report.straight_line(instructions))
        key = (passes[m.group(1)], variants[int(m.group(2))], types[m.group(3)])
        out[key] = {k: v / 8 for k, v in sass_report.pipe_counts(body).items()}
        out[key]["wide"] = sass_report.moves_16_bytes(body)
    return out


def float_path_first(arch, pass_name):
    """route.h's float_path_first for 16-bit data: the forward where FP64 is slow
    (has_slow_fp64)."""
    number = int(arch[3:])
    return pass_name == "forward" and (number in (75, 86, 87, 89) or number >= 120)


def gelu_ext_counts(cubin, registers, fallback, arch):
    """{(pass, variant, dtype): counts} of gelu_ext's kernels that run on contiguous data; 16-bit
    kernels include their narrow path's deferred fallback: the enqueue at the share of warp
    rounds that queue a vector, the redo at its rate per round, its loop at its iterations per
    round, and its double path at the iterations where a lane needs it (after the float path,
    where the forward takes that first) (fallback: {(pass, variant, dtype): FALLBACK_FIELDS})."""
    out = {}
    for k in sass_report.kernel_counts(cubin, registers):
        counts = dict(k["per_element"])
        key = (k["pass_name"], k["variant"], k["dtype"])
        if key in fallback:
            f = fallback[key]
            double = "double_iterations" if float_path_first(arch, key[0]) else "settling_iterations"
            for part, weight in (("enqueue", f["queueing_rounds"]), ("redo", f["redos"]),
                                 ("redo_element", f["iterations"]), ("redo_double", f[double])):
                for pipe, n in k[part].items():
                    counts[pipe] += weight * n
        counts.update(wide=k["wide"], local=k["local"], registers=k["registers"])
        out[key] = counts
    return out


def compile_all(archs, jobs, fallback, defines=()):
    """{arch: (gelu_ext counts, stand-in counts)}, compiling what the cache lacks; defines: macros
    for gelu_ext's kernels (route.h's switches)."""
    ext_flags = sass_report.SETUP_NVCC_FLAGS + tuple(f"-D{name}" for name in defines)
    tasks = [(arch, src, flags) for arch in archs
             for src, flags in ((sass_report.KERNELS_SOURCE, ext_flags),
                                (STANDIN_SOURCE, STANDIN_FLAGS))]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        built = list(pool.map(lambda t: sass_report.compile_cubin(t[0], t[1], t[2]), tasks))
    result = {}
    for i, arch in enumerate(archs):
        (ext_cubin, ext_regs), (standin_cubin, _) = built[2 * i], built[2 * i + 1]
        result[arch] = (gelu_ext_counts(ext_cubin, ext_regs, fallback, arch),
                        standin_counts(standin_cubin))
    return result


def memory_time(gpu, elements_moved, dtype):
    """Seconds per element to move `elements_moved` operand elements at the copy bandwidth."""
    _, _, _, bandwidth = GPUS[gpu]
    return elements_moved * SIZES[dtype] / (MEMORY_EFFICIENCY * bandwidth)


def predict(gpu, counts, elements_moved, dtype):
    """(seconds per element, limiting resource, share of copy bandwidth) of a kernel."""
    arch, sms, clock, _ = GPUS[gpu]
    times = {"memory": memory_time(gpu, elements_moved, dtype)}
    for pipe, lanes in ARCH_RATES[arch].items():
        times[pipe] = counts[pipe] / (lanes * sms * clock)
    limit = max(times, key=times.get)
    return times[limit], limit, times["memory"] / times[limit]


def unfused_time(gpu, pass_name, variant, dtype, standin):
    """Seconds per element of a fused op's eager equivalent (UNFUSED_NOTE)."""
    extra = {"bias_gelu": 2, "bias_gelu backward": 1, "geglu": 3, "geglu backward": 6}[pass_name]
    base = "forward" if pass_name in ("bias_gelu", "geglu") else "backward"
    moved = sass_report.OPERAND_BYTES[base]
    t, _, _ = predict(gpu, standin[(base, variant, dtype)], moved, dtype)
    return t + memory_time(gpu, extra, dtype)


def fused_time(gpu, pass_name, variant, dtype, ext):
    """gelu_ext's kernel, and for the bias backward the same bias-gradient sum as unfused."""
    t, limit, share = predict(gpu, ext[(pass_name, variant, dtype)],
                              sass_report.OPERAND_BYTES[pass_name], dtype)
    if pass_name == "bias_gelu backward":
        t += memory_time(gpu, 1, dtype)
    return t, limit, share


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def report(gpus, dtypes, counts):
    ext = {g: counts[GPUS[g][0]][0] for g in gpus}
    standin = {g: counts[GPUS[g][0]][1] for g in gpus}
    sections = []

    ratio_rows, ext_rows, standin_rows, slower = [], [], [], [0, 0]
    for dtype in dtypes:
        for variant in VARIANTS:
            for pass_name in PASSES:
                key = (pass_name, variant, dtype)
                moved = sass_report.OPERAND_BYTES[pass_name]
                ratios, mine, theirs = [], [], []
                for g in gpus:
                    t, limit, share = predict(g, ext[g][key], moved, dtype)
                    t0, limit0, share0 = predict(g, standin[g][key], moved, dtype)
                    ratios.append(f"{t / t0:.2f}")
                    mine.append(f"{share:.0%} {limit}")
                    theirs.append(f"{share0:.0%} {limit0}")
                    if dtype != "float64" and variant != "sigmoid":
                        slower[0] += t > t0 * 1.005
                        slower[1] += 1
                ratio_rows.append([dtype, variant, pass_name] + ratios)
                ext_rows.append([dtype, variant, pass_name] + mine)
                standin_rows.append([dtype, variant, pass_name] + theirs)
    head = ["dtype", "form", "pass"] + list(gpus)
    sections.append("### Predicted time of gelu_ext over F.gelu's (above 1: gelu_ext slower)\n\n"
                    + table(head, ratio_rows) + "\n\n"
                    f"{slower[0]} of {slower[1]} cells of float32, bfloat16 and float16, exact "
                    "and tanh forms, are predicted slower than F.gelu. The sigmoid form is "
                    "compared with x·σ(1.702x) fused into one kernel.")
    sections.append("### gelu_ext: share of copy bandwidth, limiting resource\n\n"
                    + table(head, ext_rows))
    sections.append("### F.gelu stand-in: share of copy bandwidth, limiting resource\n\n"
                    + table(head, standin_rows))

    fused_rows = []
    for dtype in dtypes:
        for variant in VARIANTS:
            for pass_name in FUSED:
                cells = []
                for g in gpus:
                    t, limit, share = fused_time(g, pass_name, variant, dtype, ext[g])
                    t0 = unfused_time(g, pass_name, variant, dtype, standin[g])
                    cells.append(f"{t / t0:.2f} ({share:.0%} {limit})")
                fused_rows.append([dtype, variant, pass_name] + cells)
    sections.append("### Fused ops: predicted time over their eager F.gelu equivalents "
                    "(gelu_ext's kernel: share of copy bandwidth, limit)\n\n"
                    + table(head, fused_rows) + "\n\n" + UNFUSED_NOTE.replace("\n", " "))

    second = []
    for dtype in dtypes:
        for variant in VARIANTS:
            cells = []
            for g in gpus:
                _, limit, share = predict(g, ext[g][("double backward", variant, dtype)],
                                          sass_report.OPERAND_BYTES["double backward"], dtype)
                cells.append(f"{share:.0%} {limit}")
            second.append([dtype, variant] + cells)
    sections.append("### Double backward: share of copy bandwidth, limiting resource\n\n"
                    + table(["dtype", "form"] + list(gpus), second))
    return "\n\n".join(sections)


def counts_report(archs, dtypes, counts):
    rows = []
    pipes = ("issue", "fp64", "fp32", "mufu", "convert", "alu")
    for arch in archs:
        ext, standin = counts[arch]
        for dtype in dtypes:
            for variant in VARIANTS:
                for pass_name in PASSES + FUSED + ("double backward",):
                    c = ext[(pass_name, variant, dtype)]
                    s = standin.get((pass_name, variant, dtype))
                    cells = [f"{c[p]:.1f}" + (f" ({s[p]:.1f})" if s else "") for p in pipes]
                    blocks = resident_blocks(arch, c["registers"]) if c["registers"] else "?"
                    rows.append([arch, dtype, variant, pass_name] + cells +
                                ["yes" if c["wide"] else "NO", c["local"], c["registers"], blocks])
    return ("### Per-element counts of each main loop (F.gelu stand-in in parentheses)\n\n"
            "blocks/SM: the kernel's blocks of 256 threads resident on an SM at once, by its "
            "registers; each launch's grid is that times the SMs, one wave.\n\n"
            + table(["arch", "dtype", "form", "pass", "issued", "FP64", "FP32 pipe", "MUFU",
                     "convert", "ALU", "16-byte", "LDL/STL", "registers", "blocks/SM"], rows))


def preamble(gpus, fallback_text):
    lines = ["| GPU | arch | SMs | boost GHz | TB/s | issue | FP64 | FP32 | MUFU | convert | ALU |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for g in gpus:
        arch, sms, clock, bw = GPUS[g]
        r = ARCH_RATES[arch]
        lines.append(f"| {g} | {arch} | {sms} | {clock / 1e9:.3f} | {bw / 1e12:.3g} | "
                     + " | ".join(str(r[p]) for p in ("issue", "fp64", "fp32", "mufu",
                                                        "convert", "alu")) + " |")
    return ("Model: each kernel runs at the pace of its slowest resource, memory at "
            f"{MEMORY_EFFICIENCY:.0%} of the datasheet bandwidth or a pipe at its lanes per SM "
            "and clock (below; sources in bench/gpu_model.py). Counts are per element of each "
            "main loop's common path, plus the 16-bit narrow path's deferred fallback: the enqueue at "
            "the share of warp rounds that queue an entry, the redo of 32 queued entries at its rate "
            "per round, and its loop over their unsure elements and the double path in it at their "
            f"iterations per round ({fallback_text}). Kernels: gelu_ext's contiguous "
            "kernels, and the rows kernels of the fused ops; F.gelu: bench/fgelu_standin.cu.\n\n"
            + "\n".join(lines))


def fallback_report(fallback, dtypes):
    rows = []
    for dtype in ("bfloat16", "float16"):
        if dtype not in dtypes:
            continue
        for pass_name in PASSES + FUSED:
            cells = []
            for v in VARIANTS:
                f = fallback[(pass_name, v, dtype)]
                cell = (f"{f['unsure']:.3%} / {f['queueing_rounds']:.0%} / "
                        f"{f['iterations']:.3f}")
                if float_path_first("sm_86", pass_name):
                    cell += f"; double path {f['doubled']:.4%} / {f['double_iterations']:.3f}"
                cells.append(cell)
            rows.append([dtype, pass_name] + cells)
    return ("### 16-bit narrow path: its deferred fallback\n\n"
            "Per cell: the elements the narrow path leaves unsure / the warp rounds (32 lanes' "
            "entries of 16 elements in the plain passes, two vectors each, and of 8 in the fused "
            "ops) that queue one / the redo's iterations per round (each, the most unsure "
            "elements of any of the 32 entries redone). Where FP64 is slow (compute capability "
            "7.5, 8.6 to 8.9, 12.x), the forward's fallback settles by the float path, and only "
            "what it leaves goes on to the double path: \"double path\", its elements / "
            "iterations per round. Elsewhere, and in the other passes, the fallback settles by "
            "the double path.\n\n"
            + table(["dtype", "pass"] + list(VARIANTS), rows))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", help="comma-separated GPU names, of: " + ", ".join(GPUS))
    parser.add_argument("--arch", help="comma-separated architectures (sm_80, ...): their GPUs")
    parser.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated dtypes")
    parser.add_argument("--counts", action="store_true", help="also the per-element counts")
    parser.add_argument("--out", help="markdown file to write (default, without --gpus or "
                        f"--arch: {os.path.relpath(DEFAULT_OUT)})")
    parser.add_argument("--sigma", type=float, default=1.0, help="standard deviation of the "
                        "normal data on which the narrow path's fallback is counted (1)")
    parser.add_argument("--fallback-rate", type=float, help="instead, this share of 16-bit "
                        "elements for every pass")
    parser.add_argument("--define", action="append", default=[], metavar="NAME",
                        help="compile gelu_ext's kernels with this macro (a route switch of "
                             "csrc/math/route.h); repeatable")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="compiles at a time")
    args = parser.parse_args()
    gpus = list(GPUS)
    if args.gpus:
        wanted = [g.strip() for g in args.gpus.split(",")]
        unknown = [g for g in wanted if g not in GPUS]
        if unknown:
            parser.error(f"unknown GPU(s) {unknown}; known: {', '.join(GPUS)}")
        gpus = wanted
    if args.arch:
        archs = [a.strip() for a in args.arch.split(",")]
        unknown = [a for a in archs if a not in ARCH_RATES]
        if unknown:
            parser.error(f"unknown architecture(s) {unknown}; known: {', '.join(ARCH_RATES)}")
        gpus = [g for g in gpus if GPUS[g][0] in archs]
    dtypes = [d.strip() for d in args.dtypes.split(",")]
    if any(d not in DTYPES for d in dtypes):
        parser.error(f"dtypes are among {', '.join(DTYPES)}")
    archs = sorted({GPUS[g][0] for g in gpus} | set(args.arch.split(",") if args.arch else ()),
                   key=list(ARCH_RATES).index)
    if args.fallback_rate is None:
        fallback = measured_fallback(args.sigma)
        fallback_text = (f"measured by bench/narrow_fallback.cpp on normal data, σ = {args.sigma:g}"
                         ", in the last table")
    else:
        keys = [(p, v, d) for p in PASSES + FUSED for v in VARIANTS for d in ("bfloat16", "float16")]
        fallback = {k: assumed_fallback(args.fallback_rate) for k in keys}
        fallback_text = f"one element in {1 / args.fallback_rate:.0f} for every pass"
    counts = compile_all(archs, args.jobs, fallback, args.define)
    text = (preamble(gpus, fallback_text) + "\n\n" + report(gpus, dtypes, counts) + "\n\n"
            + fallback_report(fallback, dtypes))
    if args.counts:
        text += "\n\n" + counts_report(archs, dtypes, counts)
    print(text)
    out = args.out or (None if (args.gpus or args.arch or args.define) else DEFAULT_OUT)
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            f.write("## GPU model: gelu_ext against F.gelu, from the machine code\n\n"
                    "Written by `python bench/gpu_model.py" + (" --counts" if args.counts else "")
                    + "`.\n\n" + text + "\n")


if __name__ == "__main__":
    main()
