"""Reads the machine code (SASS) of gelu_ext's CUDA kernels, without a GPU.

For each kernel it finds the main loop (the one with the global loads), and counts per element
(a 16-byte vector per iteration in the contiguous and rows kernels, one element in the strided)
the instructions issued and those of each execution pipe: FP64 (DFMA, DADD, ...), the FP32 pipe
(FFMA, FADD, FMUL, IMAD, HFMA2, ...), MUFU (special functions), conversions (F2F, F2I, I2F,
F2FP, ...) and the integer/logic ALU; it checks for 16-byte loads and stores (LDG.E.128 /
STG.E.128) and for local-memory traffic (LDL/STL: spills). Out-of-line slow paths (a CALL to a
subroutine, such as a division's special cases) are left out of the counts; both sides of an
inline branch are counted, as a warp whose lanes disagree runs both.

    python bench/sass_report.py                  # compiles csrc/cuda/gelu_cuda.cu for sm_90
    python bench/sass_report.py --arch sm_86     # another architecture
    python bench/sass_report.py --define GELU_ROUTE_NO_F64_PAIR   # without a route switch's path
    python bench/sass_report.py --cubin FILE     # or reads a cubin / object / .so

bench/gpu_model.py turns these counts into predicted speeds on named GPUs. Compiled cubins are
kept in the temporary directory under a digest of the sources, flags and compiler, so reruns
reuse them. Needs nvcc (to compile) and cuobjdump (the CUDA toolkit's, or the one triton ships).
"""

import argparse
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KERNELS_SOURCE = os.path.join(ROOT, "csrc", "cuda", "gelu_cuda.cu")
# Device flags of setup.py (besides -arch): the math writes every fused multiply-add itself.
SETUP_NVCC_FLAGS = ("-O3", "-std=c++17", "--fmad=false", "--expt-relaxed-constexpr")

PASSES = {"0": "forward", "1": "backward", "2": "double backward", "3": "bias_gelu",
          "4": "bias_gelu backward", "5": "geglu", "6": "geglu backward"}
VARIANTS = {"0": "none", "1": "tanh", "2": "sigmoid"}
DTYPES = {"0": ("float32", 4), "1": ("float64", 8), "2": ("float16", 2), "3": ("bfloat16", 2)}
# Elements moved per output element: each operand read or written once (bias reads are cached).
OPERAND_BYTES = {"forward": 2, "backward": 3, "double backward": 5, "bias_gelu": 2,
                 "bias_gelu backward": 3, "geglu": 3, "geglu backward": 5}

# Execution pipe of each SASS opcode (its name before the first dot). Instructions of no pipe
# here (branches, loads and stores, constant and special-register reads, the uniform datapath's
# U* instructions) still take an issue slot.
PIPES = {
    "fp64": ("DFMA", "DADD", "DMUL", "DSETP", "DMNMX", "DSET"),
    # FP32 arithmetic, and what shares its (FMA) pipe: integer multiply-add (IMAD, also the
    # compiler's favourite register move) and packed 16-bit arithmetic.
    "fp32": ("FFMA", "FADD", "FMUL", "FFMA2", "FADD2", "FMUL2", "FSWZADD", "IMAD", "IMUL", "IDP",
             "HFMA2", "HADD2", "HMUL2", "HMNMX2"),
    "mufu": ("MUFU",),
    "convert": ("F2F", "F2I", "I2F", "F2FP", "F2IP", "I2FP", "FRND", "I2I"),
    # Integer, logic, compare/select and move instructions.
    "alu": ("IADD3", "IADD", "VIADD", "LOP3", "LOP", "SHF", "SHL", "SHR", "ISETP", "FSETP",
            "FSEL", "SEL", "FMNMX", "IMNMX", "VIMNMX", "VIADDMNMX", "LEA", "PRMT", "MOV", "IABS",
            "PLOP3", "P2R", "R2P", "BMSK", "SGXT", "FCHK", "ISCADD", "BREV", "FLO", "POPC",
            "CS2R"),
}
PIPE_OF = {op: pipe for pipe, ops in PIPES.items() for op in ops}
# Packed instructions that do two FP32 operations per lane.
DOUBLE_WIDTH = ("FFMA2", "FADD2", "FMUL2")


def find_tool(name):
    candidates = [shutil.which(name)]
    try:
        import triton
        candidates.append(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia",
                                       "bin", name))
    except ImportError:
        pass
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home:
            candidates.append(os.path.join(home, "bin", name))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    sys.exit(f"sass_report: {name} not found (install the CUDA toolkit or triton)")


def tool_release(path):
    """The CUDA release of a CUDA tool (nvcc, cuobjdump) as (major, minor), or None."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return None
    found = re.search(r"release (\d+)\.(\d+)", out)
    return (int(found[1]), int(found[2])) if found else None


def cache_dir():
    path = os.path.join(tempfile.gettempdir(), "gelu_ext_sass")
    os.makedirs(path, exist_ok=True)
    return path


def source_digest(source, flags):
    """Digest of what a compile reads: the source, every header under csrc/ (coefficients.inc
    included), the flags and the compiler's version."""
    h = hashlib.sha256()
    nvcc = find_tool("nvcc")
    h.update(subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.encode())
    h.update(repr(flags).encode())
    paths = [source] + sorted(
        os.path.join(d, f) for d, _, files in os.walk(os.path.join(ROOT, "csrc"))
        for f in files if f.endswith((".h", ".cuh", ".inc")))
    for p in paths:
        h.update(p.encode())
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:24]


def compile_cubin(arch="sm_90", source=KERNELS_SOURCE, flags=SETUP_NVCC_FLAGS):
    """The kernels as setup.py builds them, for one architecture. Returns the cubin's path and
    the registers per kernel."""
    flags = tuple(flags) + (f"-arch={arch}",)
    base = os.path.join(cache_dir(), source_digest(source, flags))
    cubin, regs = base + ".cubin", base + ".registers.json"
    if not (os.path.exists(cubin) and os.path.exists(regs)):
        partial = f"{base}.{os.getpid()}.partial.cubin"
        cmd = [find_tool("nvcc"), *flags, "-cubin", "-I", os.path.join(ROOT, "csrc"), source,
               "-o", partial, "-Xptxas", "-v"]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{result.stderr[-4000:]}")
        registers = {name: int(n) for name, n in re.findall(
            r"Compiling entry function '(\w+)'.*?Used (\d+) registers", result.stderr, re.S)}
        with open(regs, "w") as f:
            json.dump(registers, f)
        os.replace(partial, cubin)
    with open(regs) as f:
        return cubin, json.load(f)


def disassemble(cubin):
    """cuobjdump's SASS listing of a cubin; kept (compressed) beside a cubin of the cache."""
    cached = cubin + ".sass.gz"
    in_cache = os.path.dirname(os.path.abspath(cubin)) == cache_dir()
    if in_cache and os.path.exists(cached):
        with gzip.open(cached, "rt") as f:
            return f.read()
    text = subprocess.run([find_tool("cuobjdump"), "-sass", cubin], capture_output=True,
                          text=True, check=True).stdout
    if in_cache:
        with gzip.open(cached + f".{os.getpid()}.partial", "wt", compresslevel=1) as f:
            f.write(text)
        os.replace(cached + f".{os.getpid()}.partial", cached)
    return text


def kernels(cubin):
    """(mangled name, [(address, opcode, operands)]) of every kernel in the cubin."""
    return listed_kernels(disassemble(cubin))


def library_kernels(library, arch):
    """kernels() of one architecture's SASS in a built library: an extension's shared library
    holds a cubin per architecture it was built for. Empty where it holds none for arch."""
    result = subprocess.run([find_tool("cuobjdump"), "-sass", "-arch", arch, library],
                            capture_output=True, text=True)
    return list(listed_kernels(result.stdout)) if result.returncode == 0 else []


def listed_kernels(listing):
    """kernels() of a cuobjdump -sass listing."""
    for block in re.split(r"\n\s*Function : ", listing)[1:]:
        name, body = block.split("\n", 1)
        instructions = []
        for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)([^;]*);", body):
            instructions.append((int(m.group(1), 16), m.group(3), m.group(4)))
        yield name.strip(), instructions


def largest_backward_range(instructions, accept=lambda body: True):
    """The instructions of the largest range that a backward branch of instructions spans and
    accept takes, or None."""
    best = None
    for addr, op, args in instructions:
        m = re.search(r"0x([0-9a-f]+)", args)
        if op.startswith("BRA") and m and int(m.group(1), 16) < addr:
            body = [ins for ins in instructions if int(m.group(1), 16) <= ins[0] <= addr]
            if accept(body) and (best is None or len(body) > len(best)):
                best = body
    return best


def main_loop(instructions):
    """The instructions of the largest backward branch's range that holds a global load and no
    EXIT (the branches back from out-of-line code after the EXIT, such as a warp collective's
    divergent case, span the kernel's end)."""
    return largest_backward_range(instructions, lambda body: any(
        o.startswith("LDG") for _, o, _ in body) and not any(o == "EXIT" for _, o, _ in body))


def straight_line(instructions):
    """The instructions up to the first EXIT: the whole work of a kernel without a loop."""
    ops = [op for _, op, _ in instructions]
    return instructions[:ops.index("EXIT") + 1] if "EXIT" in ops else instructions


def split_cold(body):
    """(hot, cold): body split at the ranges that a forward branch jumps over and that call a
    subroutine. nvcc lays out rarely taken code so (a division's special cases; the double-path
    fallback of the 16-bit narrow path, whose division has them): the common path jumps over it."""
    cold = set()
    for i, (addr, op, args) in enumerate(body):
        m = re.search(r"0x([0-9a-f]+)", args)
        if not (op.startswith("BRA") and m and int(m.group(1), 16) > addr):
            continue
        target = int(m.group(1), 16)
        if target > body[-1][0]:
            continue  # out of the loop: a warp collective's divergent case, laid out after EXIT
        skipped = [j for j in range(i + 1, len(body)) if body[j][0] < target]
        if any(body[j][1].startswith("CALL") for j in skipped):
            cold.update(skipped)
    return ([ins for j, ins in enumerate(body) if j not in cold],
            [ins for j, ins in enumerate(body) if j in cold])


def double_fallback(cold):
    """The instructions of cold (split_cold's) in the double path's ranges: the smallest ranges
    that a forward branch jumps over, call a subroutine (the double division's special cases) and
    hold 10 FP64 instructions or more. Where the 16-bit forward takes the float path first (route.h's
    float_path_first), these run rarer than the rest of cold."""
    addresses = [addr for addr, _, _ in cold]
    ranges = []
    for i, (addr, op, args) in enumerate(cold):
        m = re.search(r"0x([0-9a-f]+)", args)
        if not (op.startswith("BRA") and m and int(m.group(1), 16) > addr):
            continue
        target = int(m.group(1), 16)
        inside = [j for j in range(i + 1, len(cold)) if addresses[j] < target]
        ops = [cold[j][1].split(".")[0] for j in inside]
        if any(o == "CALL" for o in ops) and sum(o in PIPES["fp64"] for o in ops) >= 10:
            ranges.append(set(inside))
    smallest = [r for r in ranges if not any(o < r for o in ranges)]
    chosen = set().union(*smallest) if smallest else set()
    return [ins for j, ins in enumerate(cold) if j in chosen]


def hot_path(body):
    return split_cold(body)[0]


def pipe_counts(body):
    """Issued instructions (NOPs aside) and operations per pipe of an instruction range."""
    counts = dict.fromkeys(["issue", *PIPES], 0)
    for _, op, _ in body:
        if op == "NOP":
            continue
        counts["issue"] += 1
        base = op.split(".")[0]
        pipe = PIPE_OF.get(base)
        if pipe:
            counts[pipe] += 2 if base in DOUBLE_WIDTH else 1
    return counts


def access_width(op):
    """Bits moved per thread by a load or store opcode such as LDG.E.128 or STG.E.U16."""
    sizes = {"128": 128, "64": 64, "U16": 16, "S16": 16, "U8": 8, "S8": 8}
    return next((sizes[p] for p in op.split(".")[1:] if p in sizes), 32)


def memory_widths(body):
    """The widths in bits of the global loads and of the global stores of a range."""
    return tuple(sorted({access_width(op) for _, op, _ in body if op.startswith(prefix)})
                 for prefix in ("LDG", "STG"))


def moves_16_bytes(body):
    ops = [op for _, op, _ in body]
    return any(op.startswith("LDG.E.128") for op in ops) and any(
        op.startswith("STG.E.128") for op in ops)


def local_memory(instructions):
    return sum(op.startswith(("LDL", "STL")) for _, op, _ in instructions)


def parse_name(mangled):
    m = re.search(r"(contiguous|rows|strided)_kernel.*?PassE(\d)E.*?ApproximateE(\d)E.*?DTypeE(\d)E"
                  r"(?:(i|l)E)?", mangled)
    if not m:
        return None
    kind, p, a, d, index = m.groups()
    return kind, PASSES[p], VARIANTS[a], DTYPES[d], {"i": "int32", "l": "int64"}.get(index)


def is_shown(kind, pass_name, index):
    """The kernels that run on contiguous data: the contiguous kernels (32-bit indices) of the
    plain passes, and the rows kernels of the fused ops, whose bias or halves make them the ones
    that run."""
    fused = pass_name.startswith(("bias_gelu", "geglu"))
    return (kind == "contiguous" and index == "int32" and not fused) or (kind == "rows" and fused)


def skipped_after_vote(hot):
    """The instructions of hot that the first forward branch after a VOTE jumps over: the
    16-bit kernels' enqueue of a warp round's unsure vectors (gelu_cuda.cu's DeferredVectors::add),
    which runs only on the rounds that have one."""
    votes = [i for i, (_, op, _) in enumerate(hot) if op.startswith("VOTE")]
    if not votes:
        return []
    for i in range(votes[0] + 1, len(hot)):
        addr, op, args = hot[i]
        m = re.search(r"0x([0-9a-f]+)", args)
        if op.startswith("BRA") and m and addr < int(m.group(1), 16) <= hot[-1][0]:
            return [ins for ins in hot[i + 1:] if ins[0] < int(m.group(1), 16)]
    return []


def inner_loop(cold):
    """The instructions of cold within its largest backward branch's range: the redo's loop over
    a vector's unsure elements (DeferredVectors::redo_entry); all of cold if it has none."""
    return largest_backward_range(cold) or list(cold)


def kernel_counts(cubin, registers=None, everything=False):
    """Per-element counts of each kernel's main loop, a list of dicts: per_element, those of its
    common path; and for the 16-bit narrow path's deferred fallback, the parts that run on some
    rounds only: enqueue (the rounds that queue a vector), redo (once per redo of the queue, apart
    from its loop), redo_element (each iteration of the redo's loop over unsure elements, apart from
    the double path) and redo_double (the double path's ranges, double_fallback)."""
    rows = []
    for name, instructions in kernels(cubin):
        parsed = parse_name(name)
        if parsed is None:
            continue
        kind, pass_name, variant, (dtype, size), index = parsed
        if not everything and not is_shown(kind, pass_name, index):
            continue
        hot, cold = split_cold(main_loop(instructions) or [])
        enqueue = skipped_after_vote(hot)
        common = [ins for ins in hot if ins not in enqueue]
        loop = inner_loop(cold)
        double = double_fallback(cold)
        # Elements per round: the strided kernels' one; a 16-byte vector per operand; two on the
        # narrow path (gelu_cuda.cu's kPairedVectors: 32 vectors apart in the contiguous kernels,
        # in two rows in the rows kernels).
        paired = kind != "strided" and size == 2 and pass_name != "double backward"
        elements = 1 if kind == "strided" else 16 // size * (2 if paired else 1)

        def per_element(part):
            return {k: v / elements for k, v in pipe_counts(part).items()}

        loads, stores = memory_widths(common)
        rows.append(dict(name=name, kind=kind, pass_name=pass_name, variant=variant, dtype=dtype,
                         size=size, index=index, per_element=per_element(common),
                         enqueue=per_element(enqueue),
                         redo=per_element([ins for ins in cold if ins not in loop]),
                         redo_element=per_element([ins for ins in loop if ins not in double]),
                         redo_double=per_element(double),
                         loads=loads, stores=stores, wide=moves_16_bytes(common),
                         local=local_memory(instructions), registers=(registers or {}).get(name)))
    return rows


# H200 SXM (bench/gpu_model.py cites these): 132 SMs at 1.98 GHz, 90% of 4.8 TB/s. Per SM and
# clock: 128 instruction lanes, 64 FP64 lanes, 16 MUFU lanes, 16 conversion lanes.
H200 = dict(sms=132, clock=1.98e9, bandwidth=0.9 * 4.8e12, issue=128, fp64=64, mufu=16, convert=16)


def budget(pass_name, elem_bytes):
    h = H200
    elements_per_sm_cycle = h["bandwidth"] / (OPERAND_BYTES[pass_name] * elem_bytes) / (
        h["sms"] * h["clock"])
    return {k: h[k] / elements_per_sm_cycle for k in ("issue", "fp64", "mufu", "convert")}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cubin", help="cubin, object or shared library to read")
    parser.add_argument("--arch", default="sm_90", help="architecture to compile for (sm_90)")
    parser.add_argument("--all", action="store_true", help="also the strided and int64 kernels "
                        "(by default: the contiguous kernels, and the rows kernels of the fused "
                        "ops, whose bias or halves make them the ones that run)")
    parser.add_argument("--out", help="write the markdown table here too")
    parser.add_argument("--define", action="append", default=[], metavar="NAME",
                        help="compile with -DNAME too, such as a route switch of csrc/math/route.h "
                        "(GELU_ROUTE_NO_F64_PAIR): the counts without a mechanism")
    args = parser.parse_args()
    registers = {}
    cubin = args.cubin
    if cubin is None:
        flags = SETUP_NVCC_FLAGS + tuple(f"-D{name}" for name in args.define)
        cubin, registers = compile_cubin(args.arch, flags=flags)
    header = ["| kernel | pass | variant | dtype | instr/elem (H200 budget) | FP64/elem (budget) | "
              "FP32 pipe/elem | MUFU/elem | convert/elem | ALU/elem | 16-byte LDG/STG | "
              "LDL/STL | registers |",
              "|" + "---|" * 13]
    rows = []  # (sort key, line): by pass, variant, dtype and kernel
    for k in kernel_counts(cubin, registers, everything=args.all):
        c, b = k["per_element"], budget(k["pass_name"], k["size"])
        key = (list(PASSES.values()).index(k["pass_name"]),
               list(VARIANTS.values()).index(k["variant"]),
               ["float32", "bfloat16", "float16", "float64"].index(k["dtype"]), k["kind"],
               k["index"] or "")
        rows.append((key, f"| {k['kind']} | {k['pass_name']} | {k['variant']} | {k['dtype']} | "
                          f"{c['issue']:.1f} ({b['issue']:.0f}) | {c['fp64']:.1f} "
                          f"({b['fp64']:.0f}) | {c['fp32']:.1f} | {c['mufu']:.1f} | "
                          f"{c['convert']:.1f} | {c['alu']:.1f} | "
                          f"{'yes' if k['wide'] else 'NO'} | {k['local']} | "
                          f"{k['registers'] or '?'} |"))
    table = "\n".join(header + [line for _, line in sorted(rows)])
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
