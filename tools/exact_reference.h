// GELU in long double, for the checking tools: f(x), f'(x), and the magnitudes of the two terms
// that f' is the sum of (Phi + x phi, or p + x s' p q), against which errors are measured where
// f' crosses zero (as gelu_ext.reference.derivative_scales does).
#pragma once

#include <math.h>

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

}  // namespace tools
}  // namespace gelu_ext
