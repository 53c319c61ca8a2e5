"""The elementwise passes of csrc/kernels.h as the CPU ops compute them, and inputs that take
every path of the kernels: shared by the tests that run kernel code outside the extension through
ctypes (test_cuda_emulated.py, test_cpu_avx512_emulated.py)."""

import ctypes

import torch
from conftest import APPROXIMATIONS

from gelu_ext.reference import derivative_scales

ops = torch.ops.gelu_ext
DTYPE_CODES = {torch.float32: 0, torch.float64: 1, torch.float16: 2, torch.bfloat16: 3}
VARIANT_CODES = {name: code for code, name in enumerate(APPROXIMATIONS)}

# Each pass: its code (kernels.h); the roles of its inputs ("x": a GELU argument; "grad" or
# "bias": any value); the CPU op giving its outputs; and, in float64, the scale of each output:
# the magnitude of the terms it sums (|grad| times those of f' or f''), or 0 where the output's own
# magnitude is the scale. Near a root of f' or f'' the terms cancel, so float32 and float64
# results agree to ulps of that scale rather than of their own magnitude.
PASSES = {
    "forward": (0, ["x"], lambda i, a: [ops.gelu(i[0], a)], lambda i, a: [0]),
    "backward": (1, ["grad", "x"], lambda i, a: [ops.gelu_backward(i[0], i[1], a)],
                 lambda i, a: [i[0].abs() * d1_scale(i[1], a)]),
    "double_backward": (2, ["grad", "grad", "x"],
                        lambda i, a: list(ops.gelu_double_backward(i[0], i[1], i[2], a)),
                        lambda i, a: [i[0].abs() * d1_scale(i[2], a),
                                      (i[0] * i[1]).abs() * d2_scale(i[2], a)]),
    "bias_forward": (3, ["x", "bias"], lambda i, a: [bias_op(ops.bias_gelu, i, a)],
                     lambda i, a: [0]),
    "bias_backward": (4, ["grad", "x", "bias"],
                      lambda i, a: [bias_op(ops.bias_gelu_backward, i, a)],
                      lambda i, a: [i[0].abs() * d1_scale(i[1] + i[2], a)]),
    "geglu_forward": (5, ["x", "grad"], lambda i, a: [ops.geglu(i[0], i[1], a)],
                      lambda i, a: [0]),
    "geglu_backward": (6, ["grad", "x", "grad"],
                       lambda i, a: list(ops.geglu_backward(i[0], i[1], i[2], a)),
                       lambda i, a: [(i[0] * i[2]).abs() * d1_scale(i[1], a), 0]),
}
NUM_OUTPUTS = {"double_backward": 2, "geglu_backward": 2}


def d1_scale(x, approximate):
    return derivative_scales(x, approximate)[0]


def d2_scale(x, approximate):
    return derivative_scales(x, approximate)[1]


def bias_op(op, inputs, approximate):
    """A bias pass on operands of one shape, row by row: the CPU op takes a 1-D bias, and here
    each row of the bias operand may differ (the kernels only see operands)."""
    *others, bias = inputs
    rows = bias.reshape(-1, bias.shape[-1])
    others = [t.reshape(rows.shape) for t in others]
    results = []
    for r in range(rows.shape[0]):
        result = op(*[t[r:r + 1] for t in others], rows[r], approximate)
        results.append(result[0] if isinstance(result, tuple) else result)  # grad_input
    return torch.cat(results).reshape(bias.shape)


def gelu_arguments(n, dtype, seed):
    """n values of dtype, shuffled, where every path of the kernels is taken: zeros, infinities,
    NaN, tiny and huge values and the edges of the core domains, then random ones of both signs."""
    g = torch.Generator().manual_seed(seed)
    special = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-30, -1e-30,
                            7.875, -7.875, 8.0, -8.0, 9.0, -9.0, 20.0, -20.0, 1e30, -1e30],
                           dtype=torch.float64)
    values = torch.cat([special, torch.randn(n, generator=g, dtype=torch.float64) * 4])[:n]
    return values[torch.randperm(n, generator=g)].to(dtype)


def make_inputs(roles, n, dtype, seed=0):
    inputs = []
    for k, role in enumerate(roles):
        if role == "x":
            inputs.append(gelu_arguments(n, dtype, seed + k))
        else:  # a gradient, a bias or geglu's `up`: any finite value
            g = torch.Generator().manual_seed(seed + k)
            inputs.append(torch.randn(n, generator=g, dtype=torch.float64).mul(2).to(dtype))
    return inputs


def pointers(tensors):
    return (ctypes.c_void_p * len(tensors))(*[t.data_ptr() for t in tensors])
