"""Reference GELU values, independent of gelu_ext's kernels: for tests, bench/accuracy.py and the
self-check of `python -m gelu_ext`.

- `torch_reference`: float64 torch math in cancellation-free forms. Its relative error is below
  1e-12 for |x| < 38 (the erfc argument's rounding, amplified by x^2, dominates the tail), far
  below a float32 ulp; use it to judge float32 and 16-bit results, not float64 ones.
- `mp_reference`: mpmath at 50 significant digits, exact for every float64 input; to judge float64
  results and to validate `torch_reference`.

Both return (f, f', f'') for finite inputs. Non-finite inputs are for the callers to special-case.
`derivative_scales` gives the magnitudes against which derivative errors are judged where the
derivatives cross zero; `reference_and_scales` gives both at the cost of one.
"""

import math

import torch

# The constants are the decimal numbers themselves; mp_reference uses them exactly.
SIGMOID_SCALE = "1.702"
TANH_COEFF = "0.044715"  # 0.5 x (1 + tanh(sqrt(2/pi) (x + TANH_COEFF x^3)))


def _gate_arg(x, approximate):
    """s(x), s'(x), s''(x) of the gated forms x * sigmoid(s(x))."""
    if approximate == "tanh":
        c, k = 2 * math.sqrt(2 / math.pi), float(TANH_COEFF)
        return c * (x + k * x**3), c * (1 + 3 * k * x**2), 6 * c * k * x
    a = float(SIGMOID_SCALE)
    return a * x, a + 0 * x, 0 * x


# Beyond these |x| every result is its limit in float64 (x or -0; 1 or 0; 0), and the formulas
# below would overflow (x^2, x^3) into NaN.
_SATURATION = {"none": 40.0, "tanh": 1e10, "sigmoid": 1e10}


def _terms(x, approximate):
    """The terms that make up f' and f'': f' = a + b, f'' = c + d (all float64 tensors)."""
    if approximate == "none":
        cdf = 0.5 * torch.special.erfc(-x / math.sqrt(2))
        pdf = torch.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        return cdf, x * pdf, 2 * pdf, -x * x * pdf
    s, ds, d2s = _gate_arg(x, approximate)
    p, q = torch.sigmoid(s), torch.sigmoid(-s)
    pq = p * q
    return p, x * pq * ds, 2 * pq * ds, x * pq * ((q - p) * ds * ds + d2s)


def torch_reference(x, approximate="none"):
    """(f, f', f'') at x, in float64."""
    return reference_and_scales(x, approximate)[:3]


def forward_reference(x, approximate="none"):
    """f alone, as torch_reference computes it, at a third of the cost."""
    x = x.double()
    big = x.abs() > _SATURATION[approximate]
    xs = torch.where(big, torch.zeros_like(x), x)
    if approximate == "none":
        gate = 0.5 * torch.special.erfc(-xs / math.sqrt(2))
    else:
        gate = torch.sigmoid(_gate_arg(xs, approximate)[0])
    return torch.where(big, torch.where(x > 0, x, -torch.zeros_like(x)), xs * gate)


def derivative_scales(x, approximate="none"):
    """(|a| + |b|, |c| + |d|) for f' = a + b and f'' = c + d: near a root of f' or f'' the terms
    cancel, and errors are measured against these magnitudes instead of |f'|, |f''|."""
    return reference_and_scales(x, approximate)[3:]


def reference_and_scales(x, approximate="none"):
    """torch_reference and derivative_scales at once: (f, f', f'', scale of f', scale of f'')."""
    x = x.double()
    big = x.abs() > _SATURATION[approximate]
    xs = torch.where(big, torch.zeros_like(x), x)
    a, b, c, d = _terms(xs, approximate)
    gate = torch.sigmoid(_gate_arg(xs, approximate)[0]) if approximate != "none" else a
    positive = x > 0
    f = torch.where(big, torch.where(positive, x, -torch.zeros_like(x)), xs * gate)
    df = torch.where(big, positive.double(), a + b)
    d2f = torch.where(big, torch.zeros_like(x), c + d)
    s1 = torch.where(big, positive.double(), a.abs() + b.abs())  # the terms' limits: 1, 0
    s2 = torch.where(big, torch.zeros_like(x), c.abs() + d.abs())
    return f, df, d2f, s1, s2


def mp_reference(x, approximate="none", dps=50):
    """(f, f', f'') at the float x, as mpmath numbers."""
    import mpmath as mp

    with mp.workdps(dps):
        x = mp.mpf(x)
        if abs(x) > _SATURATION[approximate]:  # far below any float64 resolution of the limits
            return (x if x > 0 else mp.mpf(0)), mp.mpf(x > 0), mp.mpf(0)
        if approximate == "none":
            cdf = mp.erfc(-x / mp.sqrt(2)) / 2
            pdf = mp.exp(-x * x / 2) / mp.sqrt(2 * mp.pi)
            return x * cdf, cdf + x * pdf, pdf * (2 - x * x)
        if approximate == "tanh":
            c = 2 * mp.sqrt(2 / mp.pi)
            k = mp.mpf(TANH_COEFF)
            s, ds, d2s = c * (x + k * x**3), c * (1 + 3 * k * x**2), 6 * c * k * x
        else:
            a = mp.mpf(SIGMOID_SCALE)
            s, ds, d2s = a * x, a, mp.mpf(0)
        p, q = 1 / (1 + mp.exp(-s)), 1 / (1 + mp.exp(s))
        pq = p * q
        return x * p, p + x * pq * ds, pq * (2 * ds + x * ((q - p) * ds * ds + d2s))


# Precision (significand bits) and minimum normal exponent of each floating-point format.
FORMATS = {
    torch.float16: (11, -14),
    torch.bfloat16: (8, -126),
    torch.float32: (24, -126),
    torch.float64: (53, -1022),
}


def ulp(ref, dtype):
    """The spacing of `dtype` at each value of the float64 tensor `ref` (the subnormal spacing
    below the normal range): the unit in which errors against `ref` are measured."""
    precision, emin = FORMATS[dtype]
    # The binary exponent of |ref| from its bits (subnormal or zero ref: below emin anyway).
    exponent = ((ref.view(torch.int64) >> 52) & 0x7FF) - 1023
    unit_exponent = torch.clamp(exponent, min=emin) - (precision - 1)
    if unit_exponent.numel() and unit_exponent.min() < -1022:  # float64's subnormal spacing
        return torch.ldexp(torch.ones_like(ref), unit_exponent.double())
    return ((unit_exponent + 1023) << 52).view(torch.float64)


def ulp_error(y, ref, dtype=None):
    """|y - ref| in ulps of `dtype` (default: y's dtype) at the exact value `ref` (float64)."""
    dtype = dtype or y.dtype
    ref = ref.double()
    return (y.double() - ref).abs() / ulp(ref, dtype)


# Compute capabilities whose FP64 runs at 1/32 or 1/64 of FP32, where the CUDA kernels compute
# float32 on the float path, and those where they take the double path's mixed form
# (csrc/math/route.h, has_slow_fp64 and prefers_mixed: tests/test_route_table.py checks that
# they agree).
SLOW_FP64_CAPABILITIES = ((7, 5), (8, 6), (8, 7), (8, 9))
MIXED_CAPABILITIES = ((8, 0),)


def cuda_float32_path(capability):
    """The numeric path of the CUDA kernels' float32 on a GPU of this compute capability (major,
    minor): "f32_via_f32" (the float path) on 7.5, 8.6, 8.7, 8.9 and 12.x, "f32_via_mixed" on
    8.0, "f32_via_f64" (the double path) elsewhere."""
    if tuple(capability) in SLOW_FP64_CAPABILITIES or capability[0] >= 12:
        return "f32_via_f32"
    return "f32_via_mixed" if tuple(capability) in MIXED_CAPABILITIES else "f32_via_f64"


def same_path_on_cpu_and_cuda(dtype, approximate="none", capability=None):
    """Whether the CPU and CUDA kernels compute dtype's results by the same operations, so that
    they give the same bits (tests/test_cuda.py then requires them). 16-bit: yes, both correctly
    rounded. float32: the tanh and sigmoid forms where the GPU of this compute capability (major,
    minor; default: the current device's) takes the double path, as the CPU does; not the exact
    form, whose tail the GPU divides by a float reciprocal refined in double (within 2^-45.9 of
    the CPU's quotient: math/f32_via_f64.h), nor the mixed form or the float path. float64: no,
    the GPU's forms of the double-double path differ (the exact form's tail polynomial by
    Horner's rule, dd_div's reciprocal from a refined float reciprocal: math/f64_double_double.h,
    math/common.h), which the pair path uses or falls back to."""
    import torch

    if dtype in (torch.float16, torch.bfloat16):
        return True
    if dtype != torch.float32 or approximate == "none":
        return False
    if capability is None:
        capability = torch.cuda.get_device_capability()
    return cuda_float32_path(capability) == "f32_via_f64"
