// GELU in long double, for the checking tools: f(x), f'(x), and the magnitudes of the two terms
// that f' is the sum of (Phi + x phi, or p + x s' p q), against which errors are measured where
// f' crosses zero (as gelu_ext.reference.derivative_scales does).
#pragma once

#include <math.h>

#include "gelu_math.h"
#include "kernels.h"

namespace gelu_ext {
namespace tools {

using ld = long double;

struct Exact {
  ld f, d1, d1_terms;
};

inline Exact exact(ld x, Approximate a) {
  constexpr ld kPi = 3.141592653589793238462643383279502884L;
  if (a == Approximate::kNone) {
    const ld cdf = 0.5L * erfcl(-x / sqrtl(2.0L)), density = x * expl(-0.5L * x * x) / sqrtl(2 * kPi);
    return Exact{x * cdf, cdf + density, cdf + fabsl(density)};
  }
  ld s, ds;
  if (a == Approximate::kTanh) {
    const ld c = 2 * sqrtl(2 / kPi), k = 0.044715L;
    s = c * (x + k * x * x * x);
    ds = c * (1 + 3 * k * x * x);
  } else {
    s = 1.702L * x;
    ds = 1.702L;
  }
  const ld e = expl(-fabsl(s)), p = s >= 0 ? 1 / (1 + e) : e / (1 + e);
  const ld slope = x * ds * e / ((1 + e) * (1 + e));
  return Exact{x * p, p + slope, p + fabsl(slope)};
}

// The GPU forms' measure (math/narrow16.h, GpuNarrowPass): a term's error relative to its value,
// which must stay below kGpuTermBound, kGpuNarrowRelativeError less the rounding of a product with
// an operand (kGpuTermBoundFloat16 from float16's wider bound, for float16 arguments, whose
// outputs are float16). Checked where the term is a normal float, or 0, which is right where the
// exact value rounds to that zero in 16 bits (at most half of bfloat16's least subnormal, 2^-133:
// f of an argument below 2^-148, which underflows, as narrow16.h says); -1 for the terms not
// checked.
constexpr double kGpuTermBound = (math::kGpuNarrowRelativeError - 0x1p-24) / (1 + 0x1p-24);
constexpr double kGpuTermBoundFloat16 =
    (math::kGpuNarrowRelativeErrorFloat16 - 0x1p-24) / (1 + 0x1p-24);
inline double gpu_term_relative_error(float value, ld want) {
  if (value == 0.0f)
    return fabsl(want) <= 0x1p-134L && signbit(value) == signbit(want) ? 0.0 : INFINITY;
  if (fabsf(value) < 0x1p-126f) return -1.0;
  return static_cast<double>(fabsl(value - want) / fabsl(value));
}

}  // namespace tools
}  // namespace gelu_ext
