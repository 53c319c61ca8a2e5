"""The references the other tests judge by: gelu_ext.reference.torch_reference (float64 torch
math) against mp_reference (mpmath, 50 digits), over every float32 binade of both signs and the
tails, for f, f' and f'' of every form; and the rounding helpers of conftest.py."""

import mpmath as mp
import pytest
import torch
from conftest import (CORRECTLY_ROUNDED, REFERENCE_ACCURACY, assert_correctly_rounded,
                      assert_ulps, binade_samples, mp_exact, round_to)

from gelu_ext.reference import mp_reference, reference_and_scales


def validation_inputs():
    """Every float32 binade of both signs (2 each), a grid over [-75, 20] (every form's
    transition and tail, to below float32's smallest subnormal result) and random points there."""
    g = torch.Generator().manual_seed(1)
    random = (torch.rand(1000, generator=g, dtype=torch.float64) * 95 - 75).float().double()
    return torch.cat([binade_samples(torch.float32, per_binade=2, seed=3).double(),
                      torch.linspace(-75, 20, 951, dtype=torch.float64), random])


def test_torch_reference_against_mpmath(approximate):
    """Within REFERENCE_ACCURACY of the exact value (of max(|exact|, terms) for f' and f''),
    wherever the value is not far below float32's subnormals (2^-160, where no float32 or 16-bit
    result depends on it)."""
    x = validation_inputs()
    exact = [mp_reference(v, approximate) for v in x.tolist()]
    f, d1, d2, s1, s2 = reference_and_scales(x, approximate)
    for order, (ref, scale) in enumerate([(f, torch.zeros_like(x)), (d1, s1), (d2, s2)]):
        want = torch.tensor([float(e[order]) for e in exact], dtype=torch.float64)
        magnitude = torch.maximum(want.abs(), scale)
        error = (ref - want).abs() / magnitude.clamp(min=2.0**-160)
        error = torch.where(magnitude < 2.0**-160, (ref - want).abs() / 2.0**-160, error)
        worst = int(error.argmax())
        assert error[worst] <= REFERENCE_ACCURACY, (
            f"order {order}: relative error {error[worst].item():.3g} at x={x[worst].item()!r}")


def test_round_to_rounds_once():
    """round_to against exact rational rounding, where rounding through float would differ: a
    double just above a bfloat16 midpoint that float rounds onto the midpoint."""
    value = torch.tensor([1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-30), 2**-133 * 1.5 + 2**-170,
                          0.0, -0.0, -2**-140], dtype=torch.float64)
    rounded = round_to(value, torch.bfloat16).double()
    assert rounded.tolist()[:3] == [1 + 2**-7, -(1 + 2**-7), 2**-132]
    assert value.to(torch.bfloat16).double()[0] == 1.0, "torch's conversion rounds twice"
    assert rounded[3] == 0 and not rounded[3].signbit() and rounded[4].signbit()
    assert rounded[5] == 0 and rounded[5].signbit()


def test_correct_rounding_oracle_asks_mpmath_near_midpoints():
    """At x = 3 * 2^-133 (a bfloat16 subnormal) f(x) = x/2 + x^2 phi(0) + ... lies just above
    the midpoint x/2, where the float64 reference sits exactly: the oracle wants the upper
    neighbour, from mpmath, refuses to judge without it, and rejects the even (lower) one."""
    x = torch.tensor([3 * 2.0**-133], dtype=torch.float64)
    ref = reference_and_scales(x)[0]
    assert ref.item() == x.item() / 2
    upper = torch.tensor([2 * 2.0**-133], dtype=torch.bfloat16)
    exact = mp_exact(x, "none", 0)
    assert exact([0])[0] > mp.mpf(x.item()) / 2
    assert_correctly_rounded(upper, ref, torch.zeros(1, dtype=torch.float64), torch.bfloat16,
                             "upper", x, exact)
    with pytest.raises(AssertionError, match="pass exact_mp"):
        assert_ulps(upper, ref, CORRECTLY_ROUNDED, "upper", x)
    with pytest.raises(AssertionError, match="not correctly rounded"):
        assert_ulps(torch.tensor([2.0**-133], dtype=torch.bfloat16), ref, CORRECTLY_ROUNDED,
                    "lower", x, exact)
