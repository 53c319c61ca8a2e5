// The lane interface: what a CPU backend (cpu/simd_avx2.h, cpu/simd_avx512.h, the portable
// lanes of kernels_portable.cpp; a NEON backend would be one more) provides to the loops
// (loops.h) and the math (math/). check_lanes<L>() below states every requirement as a
// compile-time check, so that a missing or mistyped operation fails with its name here.
//
// A backend is a struct L (its "double lanes") with
//   V                     a vector of kWidth doubles, constructible from a double; with
//                         + - * / and unary -, comparisons < > >= == != giving a mask M (&
//                         combines masks), and the free functions (found by argument-dependent lookup)
//                           fma(V, V, V)  fabs(V)  with_sign_of(V v, V x)  select(M, V, V)
//                           at_least(V, double)  at_most(V, double)  at_most_each(V, V)
//                           times_pow2(V, V shifted)  times_pow2_normal(V, V shifted, V k)
//                           binary_exponent(V)  table_row(V) -> R  table_entry(column, R) -> V
//                         (math/common.h and math/f64_double_double.h say what each computes;
//                         every operation IEEE-rounded, so that all backends give one result)
//   kWidth                lanes per vector
//   load(const T*) -> V   for T = float, double, Float16, BFloat16 (cpu/storage.h): kWidth values
//   store(T*, V)          rounded to T (16-bit: to odd in float first, then to nearest even)
//   append_lanes(int32_t* out, int32_t first, uint32_t mask) -> int: first + j for each lane j
//                         set in mask, written to out[0, count) (up to 16 entries may be
//                         written), returning count: the redo queue
//   F = V, round(As<double>, V) -> V, may_round_apart(As<double>, V a, V b) -> uint32_t
//                         the float64 pair path's store and test (bit j set where a != b)
//   Narrow                its float lanes N, for the 16-bit paths:
//     F                   a vector of N::kWidth floats: the operations above on floats (no
//                         table_row, binary_exponent, at_least, at_most), comparisons also
//                         == and != (unordered), and approximate_reciprocal(F) (1/d to 2^-22)
//     Bits, kWidth        kWidth 16-bit values, and the lane count
//     append_lanes        as above
//     load(const T*) -> F, for T = Float16, BFloat16; store(T*, Bits)
//     round(As<T>, F) -> Bits                      to nearest even (NaN: any NaN)
//     may_round_apart(As<T>, F lo, F hi) -> uint32_t
//                         bit j set where [lo, hi] may contain a rounding boundary of T
//     round_interval(As<T>, F lo, F hi, MF qualified, Bits& rounded) -> uint32_t
//                         may_round_apart, or not qualified; and hi rounded (to nearest where
//                         no boundary lies between the ends)
//     cell_offsets(F x, int32_t* offsets), cell_at(const math::CubicRow* rows, F x,
//                  const int32_t* offsets, F (&c)[4], F& d) -> MF
//                         (where the route table gives this ISA narrow16_cubic) x's cell
//                         (math/narrow16.h): its row, as kWidth offsets in memory that the
//                         caller may compute a step ahead; then its row's cubic, d = x - the
//                         cell's midpoint, and the lanes where x lies in a cell
//     lookup(const uint16_t* table, const T* p) -> Bits         table[bits of p[j]]
//     lookup_bounded(const math::Bounded<float>* table, const T* p, F& value, F& error)
//     load_two, round_interval_two (optional): two vectors at once (loops.h, TwoVectors)
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "../gelu_math.h"
#include "storage.h"

namespace gelu_ext {
namespace cpu {

// The storage type an overload serves (round, may_round_apart, round_interval).
template <class T>
struct As {};

namespace lane_checks {
using namespace math;  // the scalar lanes' operations (math/common.h)
template <class T>
T& value();  // a value of type T in an unevaluated expression

#define GELU_LANE_REQUIREMENT(NAME, ...)                                   \
  template <class L, class = void>                                         \
  struct NAME : std::false_type {};                                        \
  template <class L>                                                       \
  struct NAME<L, std::void_t<decltype(__VA_ARGS__)>> : std::true_type {};

using math::CubicRow;
template <class L>
using V = typename L::V;
template <class L>
using F = typename L::Narrow::F;
template <class L>
using N = typename L::Narrow;

GELU_LANE_REQUIREMENT(DoubleArithmetic, value<V<L>>() + value<V<L>>() - value<V<L>>() *
                                            value<V<L>>() / -value<V<L>>(), V<L>(1.0))
GELU_LANE_REQUIREMENT(DoubleFunctions,
                      fma(value<V<L>>(), value<V<L>>(), value<V<L>>()), fabs(value<V<L>>()),
                      with_sign_of(value<V<L>>(), value<V<L>>()),
                      select(value<V<L>>() < value<V<L>>(), value<V<L>>(), value<V<L>>()),
                      select(value<V<L>>() > value<V<L>>(), value<V<L>>(), value<V<L>>()),
                      select(value<V<L>>() >= value<V<L>>(), value<V<L>>(), value<V<L>>()),
                      select((value<V<L>>() == value<V<L>>()) & (value<V<L>>() != value<V<L>>()),
                             value<V<L>>(), value<V<L>>()),
                      at_least(value<V<L>>(), 0.0), at_most(value<V<L>>(), 0.0),
                      at_most_each(value<V<L>>(), value<V<L>>()),
                      times_pow2(value<V<L>>(), value<V<L>>()),
                      times_pow2_normal(value<V<L>>(), value<V<L>>(), value<V<L>>()))
GELU_LANE_REQUIREMENT(DoubleTables,
                      table_entry(value<const double[16]>(),
                                  table_row(binary_exponent(value<V<L>>()))))
GELU_LANE_REQUIREMENT(DoubleLoadsAndStores,
                      L::load(value<const float*>()), L::load(value<const double*>()),
                      L::load(value<const Float16*>()), L::load(value<const BFloat16*>()),
                      L::store(value<float*>(), value<V<L>>()),
                      L::store(value<double*>(), value<V<L>>()),
                      L::store(value<Float16*>(), value<V<L>>()),
                      L::store(value<BFloat16*>(), value<V<L>>()))
GELU_LANE_REQUIREMENT(RedoQueue, int(L::append_lanes(value<int32_t*>(), 0, 0u)))
GELU_LANE_REQUIREMENT(PairPathTest,
                      L::round(As<double>(), value<V<L>>()),
                      uint32_t(L::may_round_apart(As<double>(), value<V<L>>(), value<V<L>>())))
GELU_LANE_REQUIREMENT(FloatArithmetic, value<F<L>>() + value<F<L>>() - value<F<L>>() *
                                           value<F<L>>() / -value<F<L>>(), F<L>(1.0f))
GELU_LANE_REQUIREMENT(FloatFunctions,
                      fma(value<F<L>>(), value<F<L>>(), value<F<L>>()), fabs(value<F<L>>()),
                      select((value<F<L>>() < value<F<L>>()) & (value<F<L>>() == value<F<L>>()),
                             value<F<L>>(), value<F<L>>()),
                      select((value<F<L>>() > value<F<L>>()) & (value<F<L>>() != value<F<L>>()),
                             value<F<L>>(), value<F<L>>()),
                      select(value<F<L>>() >= value<F<L>>(), value<F<L>>(), value<F<L>>()),
                      at_most_each(value<F<L>>(), value<F<L>>()),
                      times_pow2(value<F<L>>(), value<F<L>>()),
                      approximate_reciprocal(value<F<L>>()))
GELU_LANE_REQUIREMENT(NarrowLoadsAndStores,
                      N<L>::load(value<const Float16*>()), N<L>::load(value<const BFloat16*>()),
                      N<L>::store(value<Float16*>(), value<typename N<L>::Bits>()),
                      N<L>::store(value<BFloat16*>(), value<typename N<L>::Bits>()),
                      int(N<L>::append_lanes(value<int32_t*>(), 0, 0u)), int(N<L>::kWidth))
GELU_LANE_REQUIREMENT(NarrowRounding,
                      N<L>::round(As<Float16>(), value<F<L>>()),
                      N<L>::round(As<BFloat16>(), value<F<L>>()),
                      uint32_t(N<L>::may_round_apart(As<Float16>(), value<F<L>>(), value<F<L>>())),
                      uint32_t(N<L>::may_round_apart(As<BFloat16>(), value<F<L>>(),
                                                     value<F<L>>())),
                      uint32_t(N<L>::round_interval(As<Float16>(), value<F<L>>(), value<F<L>>(),
                                                    value<F<L>>() < value<F<L>>(),
                                                    value<typename N<L>::Bits>())),
                      uint32_t(N<L>::round_interval(As<BFloat16>(), value<F<L>>(), value<F<L>>(),
                                                    value<F<L>>() < value<F<L>>(),
                                                    value<typename N<L>::Bits>())))
GELU_LANE_REQUIREMENT(NarrowTables,
                      N<L>::lookup(value<const uint16_t*>(), value<const BFloat16*>()),
                      N<L>::lookup_bounded(value<const math::Bounded<float>*>(),
                                           value<const Float16*>(), value<F<L>>(), value<F<L>>()))
#undef GELU_LANE_REQUIREMENT
}  // namespace lane_checks

// Every requirement above, each failing with its own message.
template <class L>
constexpr bool check_lanes() {
  using namespace lane_checks;
  static_assert(DoubleArithmetic<L>::value, "lanes: V needs + - * / and unary -, and V(double)");
  static_assert(DoubleFunctions<L>::value,
                "lanes: V needs fma, fabs, with_sign_of, comparisons (== != too), mask &, select, "
                "at_least, at_most, at_most_each, times_pow2, times_pow2_normal");
  static_assert(DoubleTables<L>::value, "lanes: V needs binary_exponent, table_row, table_entry");
  static_assert(DoubleLoadsAndStores<L>::value,
                "lanes: load and store of float, double, Float16, BFloat16 in double lanes");
  static_assert(RedoQueue<L>::value, "lanes: append_lanes(int32_t*, int32_t, uint32_t) -> int");
  static_assert(PairPathTest<L>::value,
                "lanes: round(As<double>, V) and may_round_apart(As<double>, V, V)");
  static_assert(FloatArithmetic<L>::value, "lanes: Narrow::F needs + - * / and unary -");
  static_assert(FloatFunctions<L>::value,
                "lanes: Narrow::F needs fma, fabs, comparisons (== != too), mask &, select, "
                "at_most_each, times_pow2, approximate_reciprocal");
  static_assert(NarrowLoadsAndStores<L>::value,
                "lanes: Narrow needs kWidth, append_lanes, load and store of Float16 and "
                "BFloat16");
  static_assert(NarrowRounding<L>::value,
                "lanes: Narrow needs round, may_round_apart and round_interval for Float16 and "
                "BFloat16");
  static_assert(NarrowTables<L>::value,
                "lanes: Narrow needs lookup, lookup_bounded");
  return true;
}

}  // namespace cpu
}  // namespace gelu_ext
