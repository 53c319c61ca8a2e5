"""Digests of every op's outputs over a fixed set of inputs, to show that a change of the C++
keeps the results bit for bit (a refactor, a new lane type, a faster loop).

    python tools/output_digest.py --save before.json            # before the change
    python tools/output_digest.py --compare before.json         # after: names every difference
    GELU_EXT_CPU_ISA=avx2 python tools/output_digest.py ...     # the kernels of another ISA

Inputs, the same on every run: float32 2^24 values (half of them uniform over every bit pattern,
so every binade, subnormals, infinities and NaN; half uniform in [-12, 12]); every bit pattern of
float16 and bfloat16; 2^20 float64 values drawn alike. Other operands (gradients, bias, up) are
drawn from a seeded generator; bias rows of 1024 columns. NaN results count as equal whatever
their payload.
"""

import argparse
import hashlib
import json
import os
import sys

import torch

import gelu_ext  # noqa: F401

ops = torch.ops.gelu_ext
FORMS = ("none", "tanh", "sigmoid")


def inputs(dtype, generator):
    if dtype in (torch.float16, torch.bfloat16):
        x = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype)
        return x.clone()
    n, bits = (1 << 24, torch.int32) if dtype == torch.float32 else (1 << 20, torch.int64)
    info = torch.iinfo(bits)
    patterns = torch.randint(info.min, info.max, (n // 2,), dtype=bits, generator=generator)
    uniform = (torch.rand(n // 2, dtype=torch.float64, generator=generator) * 24 - 12).to(dtype)
    return torch.cat([patterns.view(dtype), uniform])


def other(x, generator, scale=2.0):
    return (torch.randn(x.shape, dtype=torch.float64, generator=generator) * scale).to(x.dtype)


def digest(*tensors):
    """Of the bits, every NaN taken as one: compilers may swap the operands of a commutative
    operation, and IEEE lets either NaN's payload come through."""
    h = hashlib.sha256()
    for t in tensors:
        t = torch.where(t.isnan(), torch.full_like(t, float("nan")), t)
        h.update(t.contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]


def digests():
    out = {}
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        g = torch.Generator().manual_seed(20261203)
        x = inputs(dtype, g)
        grad, grad2, up = other(x, g), other(x, g), other(x, g)
        rows = x.reshape(-1, 1024)
        bias = other(rows[0], g)
        for form in FORMS:
            key = f"{str(dtype)[6:]} {form}"
            out[f"{key} forward"] = digest(ops.gelu(x, form))
            out[f"{key} backward"] = digest(ops.gelu_backward(grad, x, form))
            out[f"{key} double_backward"] = digest(
                *ops.gelu_double_backward(grad2, grad, x, form))
            out[f"{key} bias_forward"] = digest(ops.bias_gelu(rows, bias, form))
            out[f"{key} bias_backward"] = digest(
                *ops.bias_gelu_backward(grad.reshape(rows.shape), rows, bias, form))
            out[f"{key} geglu_forward"] = digest(ops.geglu(x, up, form))
            out[f"{key} geglu_backward"] = digest(*ops.geglu_backward(grad, x, up, form))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--save", help="write the digests to this JSON file")
    parser.add_argument("--compare", help="compare with the digests in this JSON file")
    args = parser.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    isa = os.environ.get("GELU_EXT_CPU_ISA", "default")
    result = digests()
    if args.save:
        with open(args.save, "w") as f:
            json.dump({"isa": isa, "digests": result}, f, indent=1, sort_keys=True)
    if args.compare:
        with open(args.compare) as f:
            saved = json.load(f)["digests"]
        differ = sorted(k for k in result if saved.get(k) != result[k])
        missing = sorted(set(saved) - set(result))
        for k in differ:
            print(f"DIFFERS {k}: {saved.get(k)} -> {result[k]}")
        for k in missing:
            print(f"MISSING {k}")
        print(f"{len(result) - len(differ)} of {len(result)} digests equal (ISA {isa})")
        sys.exit(1 if differ or missing else 0)
    for k, v in result.items():
        print(f"{k:40s} {v}")


if __name__ == "__main__":
    main()
