"""Fits the polynomial coefficients in csrc/gelu_math.h and prints them as C++.

    python tools/fit_polynomials.py            # all tables
    python tools/fit_polynomials.py --check    # only the achieved errors

Polynomials and the rational for float32/float16/bfloat16 inputs (evaluated in double, to about
2^-33) are weighted discrete minimax fits (Lawson's iteratively reweighted least squares) of the
relative error on Chebyshev points. Those for float64 inputs (to about 2^-60) interpolate at Chebyshev
points in 50-digit arithmetic. Everything is measured against mpmath, with the coefficients
rounded to double as they are stored.
"""

import argparse

import mpmath as mp
import numpy as np

mp.mp.dps = 60


def chebyshev_points(a, b, n):
    a, b = mp.mpf(a), mp.mpf(b)
    return [(a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (2 * k + 1) / (2 * n)) for k in range(n)]


def fit(f, a, b, degree, fixed=None, iterations=80):
    """Coefficients c[0..degree] of the polynomial in x minimising max |p(x)/f(x) - 1| on [a, b];
    `fixed` maps powers to coefficients that are imposed."""
    fixed = fixed or {}
    xs = chebyshev_points(a, b, 40 * degree + 200)
    ys = [f(x) for x in xs]
    free = [p for p in range(degree + 1) if p not in fixed]
    basis = np.array([[float(x**p) for p in free] for x in xs])
    target = np.array([float(y - sum(c * x**p for p, c in fixed.items())) for x, y in zip(xs, ys)])
    relative = np.array([1 / abs(float(y)) for y in ys])
    weights = np.full(len(xs), 1 / len(xs))
    best = None
    for _ in range(iterations):
        scale = np.sqrt(weights) * relative
        coeffs, *_ = np.linalg.lstsq(basis * scale[:, None], target * scale, rcond=None)
        residual = (basis @ coeffs - target) * relative
        if best is None or np.abs(residual).max() < best[1]:
            best = (coeffs, np.abs(residual).max())
        weights *= np.abs(residual)
        weights /= weights.sum()
    result = dict(fixed)
    result.update(zip(free, best[0]))
    return [float(result[p]) for p in range(degree + 1)]


def fit_rational(f, a, b, m, n, p0, iterations=80):
    """Coefficients of P (degree m, P(0) = p0 imposed) and Q (degree n, Q(0) = 1) minimising
    max |P/Q / f - 1| on [a, b]: Lawson's reweighting of the linearised residual
    (P - f Q) / (f Q_previous)."""
    xs = chebyshev_points(a, b, 40 * (m + n) + 200)
    x = np.array([float(v) for v in xs])
    y = np.array([float(f(v)) for v in xs])
    basis = np.hstack([x[:, None] ** np.arange(1, m + 1),
                       -y[:, None] * x[:, None] ** np.arange(1, n + 1)])
    q_previous = np.ones_like(x)
    weights = np.full(len(x), 1 / len(x))
    best = None
    for _ in range(iterations):
        scale = np.sqrt(weights) / (y * q_previous)
        c, *_ = np.linalg.lstsq(basis * scale[:, None], (y - p0) * scale, rcond=None)
        num, den = np.concatenate([[p0], c[:m]]), np.concatenate([[1.0], c[m:]])
        q_previous = np.polynomial.polynomial.polyval(x, den)
        residual = np.abs(np.polynomial.polynomial.polyval(x, num) / q_previous / y - 1)
        if best is None or residual.max() < best[1]:
            best = ((num, den), residual.max())
        weights *= residual
        weights /= weights.sum()
    num, den = best[0]
    return [float(v) for v in num], [float(v) for v in den]


def max_relative_error(f, coeffs, a, b, n=3000, den=(1.0,)):
    """log2 of max |P(x)/Q(x) / f(x) - 1| on n equispaced points of [a, b]: P's coefficients
    `coeffs`, Q's `den` (1 for a polynomial)."""
    worst = mp.mpf(0)
    for k in range(n):
        x = mp.mpf(a) + (mp.mpf(b) - mp.mpf(a)) * k / (n - 1)
        p = mp.polyval([mp.mpf(c) for c in reversed(coeffs)], x)
        q = mp.polyval([mp.mpf(c) for c in reversed(den)], x)
        worst = max(worst, abs(p / q / f(x) - 1))
    return float(mp.log(worst, 2))


def interpolate(f, a, b, degree):
    """Monomial coefficients, in d = x - (a+b)/2, of the interpolant of f at Chebyshev points."""
    m, h = (mp.mpf(a) + b) / 2, (mp.mpf(b) - a) / 2
    nodes = [m + h * mp.cos(mp.pi * (2 * k + 1) / (2 * (degree + 1))) for k in range(degree + 1)]
    vandermonde = mp.matrix([[(x - m)**p for p in range(degree + 1)] for x in nodes])
    c = mp.lu_solve(vandermonde, mp.matrix([f(x) for x in nodes]))
    return [c[i] for i in range(degree + 1)]


def max_relative_error_mp(f, coeffs, center, a, b, n=400):
    worst = mp.mpf(0)
    for k in range(n + 1):
        x = mp.mpf(a) + (mp.mpf(b) - a) * k / n
        p = mp.mpf(0)
        for c in reversed(coeffs):
            p = p * (x - center) + c
        worst = max(worst, abs(p / f(x) - 1))
    return float(mp.log(worst, 2))


def double_double(v):
    hi = float(v)
    return hi, float(v - mp.mpf(hi))


def upper_tail_scaled(t):
    """R(t) = exp(t^2/2) Q(t), Q(t) = erfc(t/sqrt2)/2: the upper tail without its Gaussian factor."""
    return mp.exp(t * t / 2) * mp.erfc(t / mp.sqrt(2)) / 2


def tables():
    """name -> (description, function, interval, degree, fixed)"""
    half_ln2 = mp.log(2) / 2
    return {
        "kExpPoly": ("e^r = 1 + r + r^2 P(r) on |r| <= ln2/2: P(r), relative error of e^r",
                     lambda r: mp.exp(r), (-half_ln2, half_ln2), 7, {0: 1, 1: 1}),
    }


def rational_tables():
    """name -> (description, function, interval, numerator degree, denominator degree, P(0))"""
    return {
        "kTail": ("R(t) = P(t) / Q(t) on [0, 15], P(0) = R(0) = 1/2, Q(0) = 1", upper_tail_scaled,
                  (0, 15), 5, 6, 0.5),
    }


def float64_exp_table(check):
    """e^a = 2^k 2^(j/16) e^r, |r| <= ln2/32: 2^(j/16) as double-doubles, and the Taylor
    coefficients of (e^r - 1 - r) / r^2 through r^5/7! with the relative error they leave."""
    hi = [mp.power(2, mp.mpf(j) / 16) for j in range(16)]
    pairs = [double_double(v) for v in hi]
    coeffs = [1 / mp.factorial(n) for n in range(2, 8)]
    bound = mp.log(2) / 32
    worst = mp.mpf(0)
    for k in range(401):
        r = -bound + 2 * bound * k / 400
        p = mp.mpf(0)
        for c in reversed(coeffs):
            p = p * r + mp.mpf(float(c))
        worst = max(worst, abs((1 + r + r * r * p) / mp.exp(r) - 1))
    print(f"// float64 exp: 2^(j/16) pairs; e^r = 1 + r + r^2 P(r), |r| <= ln2/32, P Taylor to "
          f"r^5/7!: relative error of e^r 2^{float(mp.log(worst, 2)):.1f}")
    if not check:
        print("hi: {" + ", ".join(repr(h) for h, _ in pairs) + "}")
        print("lo: {" + ", ".join(repr(lo) for _, lo in pairs) + "}")
        print("GELU_COEFFICIENTS(kExpPolyF64, " + ", ".join(repr(float(c)) for c in coeffs) + ")")


def float64_tail_table(check):
    """F(t) = R(t) (t + 1) on 16 intervals [2^(n/3) - 1, 2^((n+1)/3) - 1), n = 0..15, covering
    [0, 39.3]: per interval its center, F(center) as a double-double, then the coefficients of
    d = t - center, d^1 .. d^13."""
    degree = 13
    print(f"// float64 tail: F(t) = R(t) (t + 1) on [2^(n/3) - 1, 2^((n+1)/3) - 1), n = 0..15, "
          f"degree {degree} in t - center")
    for n in range(16):
        a = mp.mpf(2)**(mp.mpf(n) / 3) - 1
        b = mp.mpf(2)**(mp.mpf(n + 1) / 3) - 1
        center = mp.mpf(float((a + b) / 2))
        f = lambda t: upper_tail_scaled(t) * (t + 1)  # noqa: E731
        m, h = center, max(center - a, b - center)
        c = interpolate(lambda d: f(d + m), -h, h, degree)  # in d, centered at 0
        hi, lo = double_double(c[0])
        stored = [mp.mpf(hi) + mp.mpf(lo)] + [mp.mpf(float(v)) for v in c[1:]]
        err = max_relative_error_mp(f, stored, center, a, b)
        print(f"    // [{float(a):.6f}, {float(b):.6f}): relative error 2^{err:.1f}")
        if not check:
            row = [float(center), hi, lo] + [float(v) for v in c[1:]]
            print("    {" + ", ".join(repr(v) for v in row) + "},")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    float64_exp_table(args.check)
    float64_tail_table(args.check)
    for name, (what, f, (a, b), degree, fixed) in tables().items():
        coeffs = fit(f, a, b, degree, fixed)
        err = max_relative_error(f, coeffs, a, b)
        print(f"// {what}: max relative error 2^{err:.1f}")
        if args.check:
            continue
        stored = coeffs[2:] if name == "kExpPoly" else coeffs  # the fixed 1 + r is written out
        print(f"GELU_COEFFICIENTS({name}, " + ", ".join(repr(cv) for cv in stored) + ")")
    for name, (what, f, (a, b), m, n, p0) in rational_tables().items():
        num, den = fit_rational(f, a, b, m, n, p0)
        err = max_relative_error(f, num, a, b, den=den)
        print(f"// {what}: max relative error 2^{err:.1f}")
        if args.check:
            continue
        print(f"GELU_COEFFICIENTS({name}Numerator, " + ", ".join(repr(cv) for cv in num) + ")")
        print(f"GELU_COEFFICIENTS({name}Denominator, " + ", ".join(repr(cv) for cv in den) + ")")


if __name__ == "__main__":
    main()
