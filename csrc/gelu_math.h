// THE math of gelu_ext: every GELU formula lives here, shared by the CPU and CUDA kernels.
//
// For each variant: the function, its first derivative and its second derivative, as inline
// host+device functions. No torch headers.
//
// Cancellation-free forms:
//   exact:   Phi(x) = erfc(-x/sqrt2) / 2, never (1 + erf(x/sqrt2)) / 2, which is 0 for x < -5.5
//            in float although Phi(x) is a normal float down to x = -13.
//   tanh:    0.5 x (1 + tanh u) = x sigmoid(2u), evaluated without overflow for any x.
//   sigmoid: x sigmoid(1.702 x).
// These reference functions compute in double. Non-finite inputs: gelu(+inf) = +inf,
// gelu(-inf) = -0, NaN -> NaN; gelu'(+inf) = 1, gelu'(-inf) = 0, gelu''(+-inf) = 0.
#pragma once

#include <math.h>

#include "kernels.h"

#if defined(__CUDACC__)
#define GELU_HD __host__ __device__ __forceinline__
#else
#define GELU_HD inline
#endif

namespace gelu_ext {
namespace math {

constexpr double kSqrtHalf = 0.70710678118654752440;      // 1/sqrt(2)
constexpr double kSqrtHalfLo = -4.8336466567264565e-17;   // 1/sqrt(2) - kSqrtHalf
constexpr double kInvSqrt2Pi = 0.39894228040143267794;    // 1/sqrt(2 pi)
constexpr double kTwoOverSqrtPi = 1.1283791670955125739;  // 2/sqrt(pi)
// tanh form: 0.5 x (1 + tanh u) = x sigmoid(s), s = 2u = x (kTanhS1 + kTanhS3 x^2)
constexpr double kTanhS1 = 1.5957691216057307117;  // 2 sqrt(2/pi)
constexpr double kTanhS3 = kTanhS1 * 0.044715;
constexpr double kSigmoidScale = 1.702;

// ---------------------------------------------------------------------------------------------
// exact: x Phi(x)

// Phi(x) = erfc(-x/sqrt2)/2. The argument is carried as z + dz so that its rounding error,
// amplified by ~x^2 in the tail, is compensated to first order.
GELU_HD double normal_cdf(double x) {
  const double z = -x * kSqrtHalf;
  const double dz = fma(-x, kSqrtHalf, -z) - x * kSqrtHalfLo;
  return 0.5 * (erfc(z) - kTwoOverSqrtPi * exp(-z * z) * dz);
}

// phi(x) = exp(-x^2/2)/sqrt(2 pi), with x^2 = h + l split exactly so exp sees no rounding error.
// Zero beyond |x| = 40, where it underflows anyway and x^2 could overflow.
GELU_HD double normal_pdf(double x) {
  if (fabs(x) > 40.0) return 0.0;
  const double h = x * x;
  const double l = fma(x, x, -h);
  return kInvSqrt2Pi * exp(-0.5 * h) * (1.0 - 0.5 * l);
}

// Phi(x) is exactly 1 or 0 in double beyond |x| = 40; saturating there keeps x = +-inf finite.
GELU_HD double exact_forward(double x) {
  if (fabs(x) > 40.0) return x > 0 ? x : -0.0;
  return x * normal_cdf(x);
}

GELU_HD double exact_derivative(double x) {
  if (fabs(x) > 40.0) return x > 0 ? 1.0 : 0.0;
  return normal_cdf(x) + x * normal_pdf(x);
}

GELU_HD double exact_second_derivative(double x) {
  if (fabs(x) > 40.0) return 0.0;
  return normal_pdf(x) * (2.0 - x * x);
}

// ---------------------------------------------------------------------------------------------
// tanh and sigmoid: x sigmoid(s(x)), with s(x) = x (kTanhS1 + kTanhS3 x^2) or 1.702 x.

struct Logistic {
  double p;   // sigmoid(s)
  double q;   // sigmoid(-s) = 1 - p, without cancellation
  double pq;  // sigmoid'(s) = p q
};

GELU_HD Logistic logistic(double s) {
  const double e = exp(-fabs(s));  // in (0, 1]: never overflows
  const double big = 1.0 / (1.0 + e), small = e / (1.0 + e);
  return Logistic{s >= 0 ? big : small, s >= 0 ? small : big, e / ((1.0 + e) * (1.0 + e))};
}

// s and its derivatives. Beyond |x| = 1e10 the gate is exactly 0 or 1 in double, and x^3 could
// overflow, so the callers treat that range as linear (x > 0) or zero (x < 0).
struct GateArg {
  double s, ds, d2s;
};
template <Approximate A>
GELU_HD GateArg gate_arg(double x) {
  if (A == Approximate::kTanh) {
    const double x2 = x * x;
    return GateArg{x * (kTanhS1 + kTanhS3 * x2), kTanhS1 + 3.0 * kTanhS3 * x2, 6.0 * kTanhS3 * x};
  }
  return GateArg{kSigmoidScale * x, kSigmoidScale, 0.0};
}

constexpr double kGateSaturated = 1e10;

template <Approximate A>
GELU_HD double gate_forward(double x) {
  if (fabs(x) > kGateSaturated) return x > 0 ? x : -0.0;
  return x * logistic(gate_arg<A>(x).s).p;
}

template <Approximate A>
GELU_HD double gate_derivative(double x) {
  if (fabs(x) > kGateSaturated) return x > 0 ? 1.0 : 0.0;
  const GateArg a = gate_arg<A>(x);
  const Logistic l = logistic(a.s);
  return l.p + x * l.pq * a.ds;
}

template <Approximate A>
GELU_HD double gate_second_derivative(double x) {
  if (fabs(x) > kGateSaturated) return 0.0;
  const GateArg a = gate_arg<A>(x);
  const Logistic l = logistic(a.s);
  // d/dx [p + x pq s'] = 2 pq s' + x pq ((q - p) s'^2 + s'')
  return l.pq * (2.0 * a.ds + x * ((l.q - l.p) * a.ds * a.ds + a.d2s));
}

// ---------------------------------------------------------------------------------------------
// Dispatch on the variant.

template <Approximate A>
GELU_HD double forward(double x) {
  if (isnan(x)) return x;
  return A == Approximate::kNone ? exact_forward(x) : gate_forward<A>(x);
}

template <Approximate A>
GELU_HD double derivative(double x) {
  if (isnan(x)) return x;
  return A == Approximate::kNone ? exact_derivative(x) : gate_derivative<A>(x);
}

template <Approximate A>
GELU_HD double second_derivative(double x) {
  if (isnan(x)) return x;
  return A == Approximate::kNone ? exact_second_derivative(x) : gate_second_derivative<A>(x);
}

// ---------------------------------------------------------------------------------------------
// What each elementwise pass computes from its operands (see Pass in kernels.h): inputs and
// outputs in the order TensorIterator lists them after the outputs.

template <Pass P, Approximate A>
struct PassMath;

template <Approximate A>
struct PassMath<Pass::kForward, A> {
  static constexpr int kInputs = 1, kOutputs = 1;
  GELU_HD static void apply(const double* in, double* out) { out[0] = forward<A>(in[0]); }
};

template <Approximate A>
struct PassMath<Pass::kBackward, A> {
  static constexpr int kInputs = 2, kOutputs = 1;  // in: grad, x
  GELU_HD static void apply(const double* in, double* out) {
    out[0] = in[0] * derivative<A>(in[1]);
  }
};

template <Approximate A>
struct PassMath<Pass::kDoubleBackward, A> {
  static constexpr int kInputs = 3, kOutputs = 2;  // in: gg, grad, x; out: ggrad, gx
  GELU_HD static void apply(const double* in, double* out) {
    out[0] = in[0] * derivative<A>(in[2]);
    out[1] = in[0] * in[1] * second_derivative<A>(in[2]);
  }
};

}  // namespace math
}  // namespace gelu_ext
