"""Reads the sm_90 machine code of gelu_ext's CUDA kernels, without a GPU.

For each kernel it finds the main loop (the one with the global loads), and counts per element
(a 16-byte vector per iteration in the contiguous and rows kernels, one element in the strided):
instructions, double-precision operations (the FP64 pipe), MUFU (special functions) and
F2F/F2I/I2F conversions, and checks for 16-byte loads and stores (LDG.E.128 / STG.E.128) and
for local-memory traffic (LDL/STL: spills). It compares the counts with what an H200 can issue
per element at its copy bandwidth.

    python bench/sass_report.py                  # compiles csrc/cuda/gelu_cuda.cu for sm_90
                                                 # (16-bit data: the narrow path, without its
                                                 # rare double-path fallback)
    python bench/sass_report.py --cubin FILE     # or reads a cubin / object / .so

Needs nvcc (to compile) and cuobjdump (the CUDA toolkit's, or the one triton ships).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# H200 SXM: 132 SMs at 1.98 GHz, ~4.3 TB/s measured copy (read + write). Per SM and cycle:
# 128 instruction lanes (4 schedulers x 32), 64 FP64 lanes, 16 MUFU lanes, 16 conversion lanes.
H200 = dict(sms=132, clock=1.98e9, bandwidth=4.3e12, issue=128, fp64=64, mufu=16, convert=16)

PASSES = {"0": "forward", "1": "backward", "2": "double backward", "3": "bias_gelu",
          "4": "bias_gelu backward", "5": "geglu", "6": "geglu backward"}
VARIANTS = {"0": "none", "1": "tanh", "2": "sigmoid"}
DTYPES = {"0": ("float32", 4), "1": ("float64", 8), "2": ("float16", 2), "3": ("bfloat16", 2)}
# Elements moved per output element: each operand read or written once (bias reads are cached).
OPERAND_BYTES = {"forward": 2, "backward": 3, "double backward": 5, "bias_gelu": 2,
                 "bias_gelu backward": 3, "geglu": 3, "geglu backward": 5}


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


def compile_cubin(arch="sm_90", narrow_only=False):
    """The kernels as setup.py builds them; narrow_only drops the double-path fallback of 16-bit
    data (taken for about one element in 2^11), so that the counts are those of the path that
    runs."""
    out = os.path.join(tempfile.mkdtemp(), "gelu_cuda.cubin")
    cmd = [find_tool("nvcc"), "-O3", "-std=c++17", "--fmad=false", "--expt-relaxed-constexpr",
           f"-arch={arch}", "-cubin", "-I", os.path.join(ROOT, "csrc"),
           os.path.join(ROOT, "csrc", "cuda", "gelu_cuda.cu"), "-o", out, "-Xptxas", "-v"]
    if narrow_only:
        cmd.append("-DGELU_SASS_NARROW_ONLY")
    result = subprocess.run(cmd, capture_output=True, text=True, check=True)
    registers = {}
    for name, regs in re.findall(r"Compiling entry function '(\w+)'.*?Used (\d+) registers",
                                 result.stderr, re.S):
        registers[name] = int(regs)
    return out, registers


def kernels(cubin):
    text = subprocess.run([find_tool("cuobjdump"), "-sass", cubin], capture_output=True,
                          text=True, check=True).stdout
    for block in re.split(r"\n\s*Function : ", text)[1:]:
        name, body = block.split("\n", 1)
        instructions = []
        for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)([^;]*);", body):
            instructions.append((int(m.group(1), 16), m.group(3), m.group(4)))
        yield name.strip(), instructions


def main_loop(instructions):
    """The instructions of the innermost backward branch's range that holds a global load."""
    best = None
    for i, (addr, op, args) in enumerate(instructions):
        if op.startswith("BRA"):
            m = re.search(r"0x([0-9a-f]+)", args)
            if m and int(m.group(1), 16) < addr:
                start = int(m.group(1), 16)
                body = [ins for ins in instructions if start <= ins[0] <= addr]
                if any(o.startswith("LDG") for _, o, _ in body):
                    if best is None or len(body) > len(best):
                        best = body
    return best


def classify(op):
    base = op.split(".")[0]
    if base in ("DFMA", "DADD", "DMUL", "DSETP", "DMNMX"):
        return "fp64"
    if base == "MUFU":
        return "mufu"
    if base in ("F2F", "F2I", "I2F", "F2FP", "I2FP", "F2IP"):
        return "convert"
    return None


def parse_name(mangled):
    m = re.search(r"(contiguous|rows|strided)_kernel.*?PassE(\d)E.*?ApproximateE(\d)E.*?DTypeE(\d)E"
                  r"(?:(i|l)E)?", mangled)
    if not m:
        return None
    kind, p, a, d, index = m.groups()
    return kind, PASSES[p], VARIANTS[a], DTYPES[d], {"i": "int32", "l": "int64"}.get(index)


def budget(pass_name, elem_bytes):
    h = H200
    elements_per_sm_cycle = h["bandwidth"] / (OPERAND_BYTES[pass_name] * elem_bytes) / (
        h["sms"] * h["clock"])
    return {k: h[k] / elements_per_sm_cycle for k in ("issue", "fp64", "mufu", "convert")}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cubin", help="cubin, object or shared library to read")
    parser.add_argument("--all", action="store_true", help="also the strided and int64 kernels "
                        "(by default: the contiguous kernels, and the rows kernels of the fused "
                        "ops, whose bias or halves make them the ones that run)")
    parser.add_argument("--out", help="write the markdown table here too")
    args = parser.parse_args()
    registers = {}
    cubin = args.cubin
    if cubin is None:
        cubin, registers = compile_cubin(narrow_only=True)
    header = ["| kernel | pass | variant | dtype | instr/elem (budget) | FP64/elem (budget) | "
              "MUFU/elem | convert/elem | 16-byte LDG/STG | LDL/STL | registers |",
              "|" + "---|" * 11]
    rows = []  # (sort key, line): by pass, variant, dtype and kernel
    for name, instructions in kernels(cubin):
        parsed = parse_name(name)
        if parsed is None:
            continue
        kind, pass_name, variant, (dtype, size), index = parsed
        fused = pass_name.startswith(("bias_gelu", "geglu"))
        shown = (kind == "contiguous" and index == "int32" and not fused) or (
            kind == "rows" and fused)
        if not args.all and not shown:
            continue
        loop = main_loop(instructions) or []
        vector_elements = 1 if kind == "strided" else 16 // size
        counts = {"fp64": 0, "mufu": 0, "convert": 0}
        for _, op, _ in loop:
            c = classify(op)
            if c:
                counts[c] += 1
        body = [op for _, op, _ in loop if op != "NOP"]
        wide = any(op.startswith("LDG.E.128") for op in body) and any(
            op.startswith("STG.E.128") for op in body)
        local = sum(op.startswith(("LDL", "STL")) for _, op, _ in instructions)
        b = budget(pass_name, size)
        per = lambda n: n / vector_elements  # noqa: E731
        key = (list(PASSES.values()).index(pass_name), list(VARIANTS.values()).index(variant),
               ["float32", "bfloat16", "float16", "float64"].index(dtype), kind, index or "")
        rows.append((key, f"| {kind} | {pass_name} | {variant} | {dtype} | {per(len(body)):.1f} "
                          f"({b['issue']:.0f}) "
                          f"| {per(counts['fp64']):.1f} ({b['fp64']:.0f}) | "
                          f"{per(counts['mufu']):.1f} | {per(counts['convert']):.1f} | "
                          f"{'yes' if wide else 'NO'} | {local} | {registers.get(name, '?')} |"))
    table = "\n".join(header + [line for _, line in sorted(rows)])
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
