import functools
import os

import pytest
import torch

import gelu_ext  # noqa: F401  (registers the ops)

FLOAT_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
HALF_DTYPES = [torch.float16, torch.bfloat16]


class CorrectlyRounded:
    """The bound of 16-bit results: each is the exact value correctly rounded (assert_ulps and
    assert_within check equality with it, and decide by mpmath where the float64 reference lies
    too close to a midpoint of the type to tell)."""

    def __repr__(self):
        return "correctly rounded"


CORRECTLY_ROUNDED = CorrectlyRounded()

# Largest errors, in ulps of the exact value (of max(|exact|, its terms) for f' and f'', whose
# terms cancel where they cross zero: gelu_ext.reference.derivative_scales), just above what was
# measured:
# - float32: f 0.502 and f' 0.502 over every input (docs/accuracy.md, exhaustive), f'' 0.501 over
#   2^22 samples of every binade and the tails (test_forward.py's sweep measures 0.5019, 0.5014
#   and 0.5008);
# - float64 against mpmath, 24,500 inputs per form over every binade, [-40, 40], [-400, 400] and
#   the tail: normal results within 0.54 ulp (docs/accuracy.md: below 0.56 on 43,000), results
#   below 2^-1022 (the double-double path, rounded into the subnormals) within 0.755 ulp.
FORWARD_ULPS = {torch.float32: 0.51, torch.float64: 0.56, torch.float16: CORRECTLY_ROUNDED,
                torch.bfloat16: CORRECTLY_ROUNDED}
FIRST_DERIVATIVE_ULPS = FORWARD_ULPS
# float32 on the GPUs' float path (csrc/math/f32_via_f32.h), over every float32 input
# (tools/check_float32_path.cpp, docs/accuracy.md): f, and f' and f'' in ulps of their larger
# term; a product with other operands is rounded once from the same pair.
FLOAT_PATH_ULPS = {"f": 0.60, "f'": 1.5, "f''": 1.5}
# float32 on the double path's mixed form (A100: csrc/math/f32_via_f64.h, kMixed), likewise over
# every float32 input.
MIXED_PATH_ULPS = {"f": 0.53, "f'": 0.51, "f''": 0.51}
SECOND_DERIVATIVE_ULPS = FORWARD_ULPS
FLOAT64_SUBNORMAL_ULPS = 0.8
# The float64 reference (gelu_ext.reference.torch_reference) is within this relative error of the
# exact value, of max(|exact|, terms) for the derivatives (tests/test_reference.py checks it
# against mpmath: 2^-44.8 measured). Where it lies closer than that to a midpoint of the output
# type, it cannot tell which way the exact value rounds.
REFERENCE_ACCURACY = 2.0**-40
# Below about this |x| the kernels' double path gets f(x) = x/2 + x^2 phi(0) + ... as exactly x/2
# (the rest is beyond a double's precision), so that where x/2, or a product of it (geglu), is a
# midpoint of the output type the result is rounded to even rather than toward the exact value's
# side; test_forward.py's tiny input tests cover these inputs, and the others leave them out.
TINY_INPUT = 2.0**-50

APPROXIMATIONS = ["none", "tanh", "sigmoid"]

CUDA_BUILT = torch._C._dispatch_has_kernel_for_dispatch_key("gelu_ext::gelu", "CUDA")
# CUDA tests skip where no GPU is visible. Where one is, a build without the CUDA backend fails
# them (pytest_runtest_setup below) rather than skipping them: it is a broken install there.
requires_cuda = [pytest.mark.skipif(not torch.cuda.is_available(),
                                    reason="CUDA test: no CUDA GPU visible"),
                 pytest.mark.cuda]


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a GPU and gelu_ext's CUDA backend")


def pytest_collection_modifyitems(config, items):
    """The modules that build native libraries (start_native_builds) start their builds now, in
    the background, and run last: the compiler works while the other tests run."""
    building = {}
    for item in items:
        module = getattr(item, "module", None)
        if hasattr(module, "start_native_builds") and not any(
                mark.name == "skipif" and mark.args and mark.args[0]
                for mark in item.iter_markers()):
            building.setdefault(module, set()).update(item.fixturenames)
    for module, fixtures in building.items():
        module.start_native_builds(fixtures)
    items.sort(key=lambda item: item.module in building)  # stable: the order otherwise kept


def pytest_runtest_setup(item):
    if item.get_closest_marker("cuda") and torch.cuda.is_available() and not CUDA_BUILT:
        pytest.fail("a CUDA GPU is visible but gelu_ext was built without its CUDA backend "
                    "(reinstall with GELU_EXT_CUDA=1 to see why)", pytrace=False)

DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture(params=APPROXIMATIONS)
def approximate(request):
    return request.param


def all_values(dtype):
    """Every bit pattern of a 16-bit float type, NaNs and infinities included."""
    return torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(dtype)


def binade_samples(dtype, per_binade=64, seed=0):
    """Random finite values from every binade of `dtype`, both signs, subnormals included."""
    bits = {torch.float32: (torch.int32, 23, 254), torch.float64: (torch.int64, 52, 2046)}
    int_dtype, mantissa_bits, max_biased = bits[dtype]
    g = torch.Generator().manual_seed(seed)
    exponents = torch.arange(0, max_biased + 1, dtype=torch.int64).repeat_interleave(per_binade)
    mantissas = torch.randint(0, 1 << mantissa_bits, exponents.shape, generator=g)
    pattern = (exponents << mantissa_bits) | mantissas
    positive = pattern.to(int_dtype).view(dtype)
    return torch.cat([positive, -positive])


def single_path_edges_f64():
    """float64 inputs at the edges of the CPU's f64_pair domains (|x| < 20 for tanh, < 380 for
    sigmoid, gelu_math.h) and a step either side, where the kernels switch paths."""
    edges = torch.tensor([20.0, 380.0], dtype=torch.float64)
    edges = torch.cat([edges, edges.nextafter(torch.zeros(2, dtype=torch.float64)),
                       edges.nextafter(torch.full((2,), 1e3, dtype=torch.float64))])
    return torch.cat([edges, -edges, torch.linspace(-400, 400, 81, dtype=torch.float64)])


def bound_tensor(bound, magnitude, dtype):
    """The bound at each element (float64 results below 2^-1022 have their own)."""
    if dtype == torch.float64:
        return torch.where(magnitude < 2.0**-1022, max(bound, FLOAT64_SUBNORMAL_ULPS), bound)
    return torch.full_like(magnitude, bound)


class MpValues:
    """Exact values as mpmath numbers, in the shape of a tensor: the reference for float64
    results, which a float64 reference would judge with half an ulp of error of its own. Products
    with float64 tensors (exact operands) stay exact."""

    def __init__(self, values, shape):
        self.values, self.shape = list(values), tuple(shape)

    @classmethod
    def of(cls, x, approximate, *orders):
        """The order-th derivatives (0: f) of GELU at each element of the float64 tensor x: one
        MpValues per order."""
        exact = [mp_reference_cached(v, approximate) for v in x.flatten().tolist()]
        values = tuple(cls((e[order] for e in exact), x.shape) for order in orders)
        return values[0] if len(orders) == 1 else values

    def __mul__(self, other):
        import mpmath as mp

        factors = torch.as_tensor(other, dtype=torch.float64).expand(self.shape).flatten()
        with mp.workdps(50):
            return MpValues([v * mp.mpf(f) for v, f in zip(self.values, factors.tolist())],
                            self.shape)

    __rmul__ = __mul__

    def double(self):
        return torch.tensor([float(v) for v in self.values], dtype=torch.float64).view(self.shape)

    def errors(self, y):
        """|y - exact| for the tensor y, as float64 (rounded once from the exact difference)."""
        import mpmath as mp

        with mp.workdps(50):
            return torch.tensor([float(abs(mp.mpf(g) - v)) for g, v in
                                 zip(y.double().flatten().tolist(), self.values)],
                                dtype=torch.float64)


def assert_within(y, exact, scale, bound, dtype, what, x, exact_mp=None):
    """Every element of y within `bound` ulps of the dtype at max(|exact|, scale), for exact a
    float64 tensor or MpValues; or, with bound CORRECTLY_ROUNDED, the exact value correctly
    rounded (exact_mp: see assert_correctly_rounded)."""
    from gelu_ext.reference import ulp

    exact_values = exact if isinstance(exact, MpValues) else None
    scale = torch.as_tensor(scale, dtype=torch.float64).expand(exact.shape).flatten()
    exact = exact.double().flatten()
    y = y.flatten()
    x = x.flatten()
    if bound is CORRECTLY_ROUNDED:
        return assert_correctly_rounded(y, exact, scale, dtype, what, x, exact_mp)
    if dtype == torch.float32 and exact_values is None and bound >= 0.5:
        # float32 results equal to the reference rounded once are within half an ulp of it:
        # measure the others (a few in 10^4), which is most of the time saved on large sweeps.
        others = (y != exact.float()).nonzero().flatten()
        y, exact, scale, x = y[others], exact[others], scale[others], x[others]
        if not len(y):
            return
    magnitude = torch.maximum(exact.abs(), scale)
    difference = exact_values.errors(y) if exact_values else (y.double() - exact).abs()
    err = difference / ulp(magnitude, dtype)
    err = torch.where(y.isnan() & exact.isnan(), torch.zeros_like(err), err)
    excess = err - bound_tensor(bound, magnitude, dtype)
    worst = int(excess.nan_to_num(nan=float("inf")).argmax())
    assert excess[worst].item() <= 0, (
        f"{what}: error {err[worst].item():.4f} ulp > {bound} at x={x[worst].item()!r}: "
        f"got {y[worst].item()!r}, expected {exact[worst].item()!r}")


def assert_product_within(y, exact, factor, scale, dtype, what, x, exact_mp=None):
    """y = factor * F, for exact = F (MpValues or float64), factor a tensor or a pair of tensors
    (whose product the kernels form first: grad * up), and scale the magnitude of F's terms (0 for
    f). float32 and 16-bit kernels form the product from F in double and round once:
    FORWARD_ULPS of the product, at max(|factor F|, |factor| scale). float64 kernels round F
    first, within its own bound, and then the product (on the GPU, and for the backward passes on
    the CPU): |y - factor F| <= 0.5 ulp(factor F) + |factor| (F's bound) ulp(F), and for a pair
    + 0.5 ulp(factor) |F|, its rounding; measured at most 1.5 ulp of the product where it is
    normal (2,000 random and 1,000 tail points per form and pass)."""
    from gelu_ext.reference import ulp

    factors = factor if isinstance(factor, tuple) else (factor,)
    factors = [torch.as_tensor(f, dtype=torch.float64).expand(exact.shape) for f in factors]
    product = exact
    for f in factors:
        product = product * f  # exact for MpValues
    factor = factors[0] if len(factors) == 1 else factors[0] * factors[1]
    scale = torch.as_tensor(scale, dtype=torch.float64).expand(exact.shape)
    if dtype != torch.float64:
        return assert_within(y, product, factor.abs() * scale, FORWARD_ULPS[dtype], dtype, what,
                             x, exact_mp)
    F, product_value = exact.double().flatten(), product.double().flatten()
    factor, scale, y, x = factor.flatten(), scale.flatten(), y.flatten(), x.flatten()
    term = torch.maximum(F.abs(), scale)
    allowed = (0.5 * ulp(torch.maximum(product_value.abs(), factor.abs() * scale), dtype) +
               factor.abs() * bound_tensor(FORWARD_ULPS[dtype], term, dtype) * ulp(term, dtype))
    if len(factors) == 2:
        allowed += 0.5 * ulp(factor.abs(), dtype) * term
    if isinstance(product, MpValues):
        error = product.errors(y)
    else:
        error = (y.double() - product_value).abs()
    ratio = torch.where(error == 0, torch.zeros_like(error), error / allowed)
    worst = int(ratio.nan_to_num(nan=float("inf")).argmax())
    assert ratio[worst] <= 1, (
        f"{what}: error {error[worst].item():.4g} > the bound {allowed[worst].item():.4g} at "
        f"x={x[worst].item()!r}: got {y[worst].item()!r}, expected {product_value[worst].item()!r}")


def assert_ulps(y, ref, bound, what, x=None, exact_mp=None):
    """Every element of y within `bound` ulps of the reference `ref` (float64 tensor, or MpValues),
    or, with bound CORRECTLY_ROUNDED, its correct rounding."""
    if y.numel() == 0:
        return
    x = torch.arange(y.numel()) if x is None else x
    assert_within(y, ref, 0.0, bound, y.dtype, what, x, exact_mp)


def round_to(value, dtype):
    """float64 values rounded once, to nearest even, to `dtype` (torch's own conversion of double
    to 16 bits passes through float, which rounds twice)."""
    from gelu_ext.reference import ulp

    finite = value.isfinite()
    unit = ulp(torch.where(finite, value, torch.zeros_like(value)), dtype)
    rounded = torch.where(finite, torch.round(value / unit) * unit, value)
    return rounded.to(dtype)  # exact: rounded has dtype's precision (overflow aside)


def assert_correctly_rounded(y, ref, scale, dtype, what, x, exact_mp=None):
    """Each y[i] is the exact value correctly rounded to dtype (the sign of a zero included, where
    the reference is not zero): the
    float64 reference `ref` rounded once, except where ref lies within REFERENCE_ACCURACY of
    max(|ref|, scale) of a midpoint of dtype, where the exact value's side of the midpoint is
    taken from exact_mp(indices) (mpmath numbers); without exact_mp, such elements fail."""
    import mpmath as mp

    from gelu_ext.reference import ulp

    expected = round_to(ref, dtype)
    unit = ulp(ref, dtype)
    below = torch.floor(ref / unit) * unit
    midpoint = below + unit / 2
    near = (ref - midpoint).abs() <= REFERENCE_ACCURACY * torch.maximum(ref.abs(), scale)
    near &= ref.isfinite()
    if near.any():
        indices = near.nonzero().flatten().tolist()
        assert exact_mp is not None, (
            f"{what}: the float64 reference cannot tell how {len(indices)} exact values round, "
            f"e.g. at x={x[indices[0]].item()!r} (reference {ref[indices[0]].item()!r}); pass "
            f"exact_mp")
        exact = exact_mp(indices)
        sides = torch.tensor([bool(e > mp.mpf(m)) for e, m in
                              zip(exact, midpoint[indices].tolist())])
        decided = torch.where(sides, below[indices] + unit[indices], below[indices])
        expected[indices] = decided.to(dtype)
    # The sign of a zero result is the exact value's, known where the reference is not zero (an
    # underflowed float64 reference may have lost it; exact zeros have tests of their own).
    sign_known = ref != 0
    same = (y == expected) & ((y.signbit() == expected.signbit()) | ~sign_known)
    same |= y.isnan() & expected.isnan()
    if not same.all():
        bad = (~same).nonzero().flatten()
        i = int(bad[0])
        raise AssertionError(
            f"{what}: {len(bad)} of {len(y)} results not correctly rounded, first at "
            f"x={x[i].item()!r}: got {y[i].item()!r}, expected {expected[i].item()!r} (float64 "
            f"reference {ref[i].item()!r})")


@functools.lru_cache(maxsize=1 << 16)
def mp_reference_cached(x, approximate):
    """gelu_ext.reference.mp_reference, kept: the tests ask for the same points several times."""
    from gelu_ext.reference import mp_reference

    return mp_reference(x, approximate)


def mp_exact(x, approximate, order, factor=None):
    """exact_mp for assert_correctly_rounded: the order-th derivative (0: f) of GELU at x[i], times
    factor[i], in mpmath (x and factor tensors of values exact in double, indexed flat; a pair of
    factors whose product is exact in double, as for 16-bit operands)."""
    import mpmath as mp

    if isinstance(factor, tuple):
        factor = factor[0] * factor[1]
    if factor is not None:
        factor = torch.as_tensor(factor, dtype=torch.float64).expand(x.shape).flatten()
    x = x.double().flatten()

    def exact(indices):
        values = [mp_reference_cached(x[i].item(), approximate)[order] for i in indices]
        with mp.workdps(50):
            return values if factor is None else [v * mp.mpf(factor[i].item())
                                                  for v, i in zip(values, indices)]

    return exact


def assert_same_bits(got, want, what):
    """Equal, with the same sign of zero (torch.equal and == take -0 for 0), and NaN against NaN
    (its sign and payload carry no meaning); shapes must match."""
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{what}: {got.dtype}{list(got.shape)} against {want.dtype}{list(want.shape)}")
    same = (got.isnan() & want.isnan()) | ((got == want) & (got.signbit() == want.signbit()))
    if not same.all():
        bad = (~same).flatten().nonzero().flatten()
        first = int(bad[0])
        raise AssertionError(
            f"{what}: {len(bad)} of {same.numel()} results differ, first at flat index {first}: "
            f"{got.flatten()[first].item()!r} against {want.flatten()[first].item()!r}")


def assert_devices_agree(got, want, scale, what, same_path=None):
    """Results of another device or kernel (got) against the CPU kernels' (want). Where both take
    the same path (same_path, by default: 16-bit results, correctly rounded on both, and float32
    on the double path) they are equal, signs of zero included. float64 results (whose
    double-double forms differ by device) and float32 on the GPU's float path are each within their
    bound of the exact value in ulps of max(|result|, scale): they differ by at most 2 ulps there.
    scale may be a function giving it, called only where needed."""
    if same_path is None:
        same_path = got.dtype != torch.float64
    from gelu_ext.reference import ulp

    same = ((got == want) & (got.signbit() == want.signbit())) | (got.isnan() & want.isnan())
    if same.all():
        return
    first = int((~same).flatten().nonzero()[0])
    assert not same_path, (
        f"{what}: {int((~same).sum())} of {same.numel()} results differ from the CPU kernels, "
        f"first at index {first}: {got.flatten()[first].item()!r} against "
        f"{want.flatten()[first].item()!r}")
    scale = scale() if callable(scale) else scale
    magnitude = torch.maximum(want.double().abs(), torch.as_tensor(scale, dtype=torch.float64))
    err = (got.double() - want.double()).abs() / ulp(magnitude, want.dtype)
    err = torch.where(same, torch.zeros_like(err), err)  # inf == inf, and NaN against NaN
    worst = int(err.flatten().argmax())
    assert err.flatten()[worst] <= 2, (
        f"{what}: {got.flatten()[worst].item()!r} against the CPU kernels' "
        f"{want.flatten()[worst].item()!r} at index {worst}: {err.flatten()[worst]:.2f} ulps")


def cpu_supports(isa):
    """Whether this CPU runs the kernels for `isa` ("avx512", "avx2" or "portable")."""
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    needed = {"avx512": ["avx512f", "avx512dq", "avx512bw", "avx512vl"],
              "avx2": ["avx2", "fma", "f16c"], "portable": []}[isa]
    return all(f" {flag}" in flags for flag in needed)
