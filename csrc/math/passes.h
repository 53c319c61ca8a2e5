// What each elementwise pass computes: one rule per pass, shared by every numeric path.
//
// A pass reads 1 to 3 inputs and writes 1 or 2 outputs (kernels.h lists its operands). Its GELU
// argument is one of the inputs, or the sum of two (the bias passes' x + b, which each path forms
// as exactly as it can). Each output is one term, f, f' or f'' at the argument, times the product
// of up to two inputs, its factors, in order. Every path (the headers beside this one) computes
// the terms a pass names and forms its outputs from them in its own arithmetic; adding a pass is
// a row of pass_rule below and its enum in kernels.h.
#pragma once

#include "common.h"

namespace gelu_ext {

enum class Term : int { kF, kD1, kD2 };  // f, f', f''

struct OutputRule {
  Term term;
  int factors[2];   // input indices
  int num_factors;  // 0, 1 or 2
};

struct PassRule {
  int inputs, outputs;
  int argument;          // the input that is the GELU argument...
  bool argument_is_sum;  // ... or, if set, it plus the input after it
  OutputRule out[2];
};

constexpr OutputRule term_only(Term t) { return OutputRule{t, {-1, -1}, 0}; }
constexpr OutputRule times(int a, Term t) { return OutputRule{t, {a, -1}, 1}; }
constexpr OutputRule times(int a, int b, Term t) { return OutputRule{t, {a, b}, 2}; }

//                                                inputs outputs argument   sum   outputs
constexpr PassRule pass_rule(Pass pass) {
  switch (pass) {
    case Pass::kForward:         // x                   -> f(x)
      return PassRule{1, 1, 0, false, {term_only(Term::kF), {}}};
    case Pass::kBackward:        // grad, x             -> grad f'(x)
      return PassRule{2, 1, 1, false, {times(0, Term::kD1), {}}};
    case Pass::kDoubleBackward:  // gg, grad, x         -> gg f'(x), gg grad f''(x)
      return PassRule{3, 2, 2, false, {times(0, Term::kD1), times(0, 1, Term::kD2)}};
    case Pass::kBiasForward:     // x, b                -> f(x + b)
      return PassRule{2, 1, 0, true, {term_only(Term::kF), {}}};
    case Pass::kBiasBackward:    // grad, x, b          -> grad f'(x + b)
      return PassRule{3, 1, 1, true, {times(0, Term::kD1), {}}};
    case Pass::kGegluForward:    // gate, up            -> up f(gate)
      return PassRule{2, 1, 0, false, {times(1, Term::kF), {}}};
    case Pass::kGegluBackward:   // grad, gate, up      -> grad up f'(gate), grad f(gate)
      return PassRule{3, 2, 1, false, {times(0, 2, Term::kD1), times(0, Term::kF)}};
  }
  return PassRule{};
}

constexpr int num_operands(Pass pass) { return pass_rule(pass).inputs + pass_rule(pass).outputs; }

// Which of f, f', f'' the pass's outputs need (Needs flags).
constexpr int needs(Pass pass) {
  int flags = 0;
  for (int k = 0; k < pass_rule(pass).outputs; ++k) {
    const Term t = pass_rule(pass).out[k].term;
    flags |= t == Term::kF ? math::kNeedF : t == Term::kD1 ? math::kNeedD1 : math::kNeedD2;
  }
  return flags;
}

namespace math {
inline namespace GELU_ISA {

// The term an output names, from f, f' and f''.
template <class T>
GELU_HD T term_of(Term term, const T& f, const T& d1, const T& d2) {
  return term == Term::kF ? f : term == Term::kD1 ? d1 : d2;
}

// The pass's GELU argument: an input, or the sum of two rounded to V.
template <Pass P, class V>
GELU_HD V argument_of(const V* in) {
  constexpr PassRule r = pass_rule(P);
  if constexpr (r.argument_is_sum) return in[r.argument] + in[r.argument + 1];
  else return in[r.argument];
}

// An output in plain arithmetic: the factors' product (left to right), times the term, each
// product rounded.
template <Pass P, int K, class V>
GELU_HD V plain_output(const V* in, V term) {
  constexpr OutputRule o = pass_rule(P).out[K];
  if constexpr (o.num_factors == 0) return term;
  else if constexpr (o.num_factors == 1) return in[o.factors[0]] * term;
  else return in[o.factors[0]] * in[o.factors[1]] * term;
}

}  // namespace GELU_ISA
}  // namespace math
}  // namespace gelu_ext
