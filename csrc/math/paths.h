// The math of each numeric path (route.h) as a type, for the kernels: PathPass<path, P, A,
// 16-bit output> has apply(in, out) over the path's lanes (bounded paths: outputs with their
// error bounds).
#pragma once

#include "f32_via_f32.h"
#include "f32_via_f64.h"
#include "f64_double_double.h"
#include "f64_pair.h"
#include "narrow16.h"
#include "route.h"

namespace gelu_ext {
namespace math {
inline namespace GELU_ISA {

template <NumericPath kPath, Pass P, Approximate A, bool kSixteenBitOutput = false>
struct PathPass;
template <Pass P, Approximate A, bool k16>
struct PathPass<NumericPath::kF32ViaF64, P, A, k16> : F32ViaF64Pass<P, A, k16> {};
template <Pass P, Approximate A, bool k16>
struct PathPass<NumericPath::kF32ViaF32, P, A, k16> : F32ViaF32Pass<P, A> {};
template <Pass P, Approximate A, bool k16>
struct PathPass<NumericPath::kF32ViaMixed, P, A, k16> : F32ViaF64Pass<P, A, k16, true> {};
template <Pass P, Approximate A, bool k16>
struct PathPass<NumericPath::kF64DoubleDouble, P, A, k16> : F64DoubleDoublePass<P, A> {};
template <Pass P, Approximate A, bool k16>
struct PathPass<NumericPath::kF64Pair, P, A, k16> : F64PairPass<P, A> {};
template <Pass P, Approximate A, bool k16>
struct PathPass<NumericPath::kNarrow16, P, A, k16> : NarrowPass<P, A> {};

}  // namespace GELU_ISA
}  // namespace math
}  // namespace gelu_ext
