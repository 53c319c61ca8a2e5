// The GPU's approximate instructions that the device forms of the narrow path use (narrow16.h),
// with the maximum errors the PTX ISA documents for them ("Floating Point Instructions"):
//   ex2.approx.ftz.f32  "The maximum ulp error is 2 ulp from correctly rounded result across the
//                       full range of inputs"; subnormal results are flushed to +0.
//   rcp.approx.ftz.f32  "The maximum ulp error is 1 across the full range of inputs."
// The narrow path's error bounds take each at its worst, and read the second the less favourable
// way too (1 ulp from the correctly rounded result): 2^u within 2.5 ulp, 1/d within 1.5 ulp.
//
// Host builds of the device forms (GELU_DEVICE_FORMS without __CUDA_ARCH__: the CUDA emulation,
// the bound checker, the fallback counter) cannot have the hardware's bits. Their stand-ins return
// the correctly rounded value moved by the documented maximum, 2 ulp or 1 ulp, up or down as a
// hash of the input's bits chooses, so that a bound that did not cover the instructions' errors
// fails there. tools/check_narrow_bounds.cpp sets each direction itself (gpu_approximate_direction)
// to check both.
#pragma once

#include "common.h"

#if defined(GELU_DEVICE_FORMS)

namespace gelu_ext {
namespace math {
inline namespace GELU_ISA {

#if defined(__CUDA_ARCH__)

__device__ __forceinline__ float gpu_exp2(float u) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(u));
  return r;
}

__device__ __forceinline__ float gpu_reciprocal(float d) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  return r;
}

#else

// The direction in which each stand-in errs: 0 by a hash of the input, +1 up, -1 down.
struct GpuApproximateDirection {
  int exp2 = 0, reciprocal = 0;
};
inline thread_local GpuApproximateDirection gpu_approximate_direction;

// value moved by `ulps` units in the last place of itself, up or down: by `direction`, or where
// that is 0, by a hash of `input`'s bits.
inline float gpu_stand_in_error(float value, float input, int direction, float ulps) {
  if (!(value > 0.0f) || value > 3.0e38f) return value;  // 0, infinity, NaN: exact
  if (direction == 0)
    direction = ((bit_cast<uint32_t>(input) * 0x9E3779B1u) >> 31) != 0 ? 1 : -1;
  const float ulp = ldexpf(1.0f, ilogbf(value) - 23);
  return value + static_cast<float>(direction) * ulps * ulp;  // exact: a multiple of ulp / 2
}

inline float gpu_exp2(float u) {
  if (u != u) return u;
  float r = static_cast<float>(exp2l(static_cast<long double>(u)));  // 2^u correctly rounded
  if (r < 0x1p-126f) return 0.0f;                                    // ftz
  r = gpu_stand_in_error(r, u, gpu_approximate_direction.exp2, 2.0f);
  return r < 0x1p-126f ? 0.0f : r;
}

inline float gpu_reciprocal(float d) {
  const float r = static_cast<float>(1.0L / static_cast<long double>(d));
  return gpu_stand_in_error(r, d, gpu_approximate_direction.reciprocal, 1.0f);
}

#endif

// x for x > 0, else -0 (+0 for +0): the GPU's max(x, -0.0), for which +0 > -0 (PTX ISA, max).
GELU_HD float positive_part(float x) {
#if defined(__CUDA_ARCH__)
  return fmaxf(x, -0.0f);
#else
  return x >= 0.0f ? x : -0.0f;  // NaN too gives -0, as there
#endif
}

}  // namespace GELU_ISA
}  // namespace math

// The narrow path's lanes (in a namespace of their own, so that their overloads, found by
// argument-dependent lookup, do not hide the math's float ones).
namespace gpu_lanes {

// Lanes of the GPU forms: float, or GpuPair, the floats of two elements, whose sums, products and
// multiply-adds are each one packed instruction from compute capability 10.0 (FADD2, FMUL2,
// FFMA2: the same IEEE operations as two floats, so the same bits), and two elsewhere; the
// approximate instructions, compares and selects act on each float.
struct GpuPair {
  float a, b;
  GpuPair() = default;
  GELU_HD GpuPair(float a_, float b_) : a(a_), b(b_) {}
  GELU_HD explicit GpuPair(float both) : a(both), b(both) {}
};
struct GpuPairMask {
  bool a, b;
};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
__device__ __forceinline__ float2 packed(GpuPair p) { return make_float2(p.a, p.b); }
__device__ __forceinline__ GpuPair unpacked(float2 v) { return GpuPair(v.x, v.y); }
__device__ __forceinline__ GpuPair operator+(GpuPair p, GpuPair q) {
  return unpacked(__fadd2_rn(packed(p), packed(q)));
}
__device__ __forceinline__ GpuPair operator*(GpuPair p, GpuPair q) {
  return unpacked(__fmul2_rn(packed(p), packed(q)));
}
__device__ __forceinline__ GpuPair fma(GpuPair p, GpuPair q, GpuPair r) {
  return unpacked(__ffma2_rn(packed(p), packed(q), packed(r)));
}
#else
GELU_HD GpuPair operator+(GpuPair p, GpuPair q) { return GpuPair(p.a + q.a, p.b + q.b); }
GELU_HD GpuPair operator*(GpuPair p, GpuPair q) { return GpuPair(p.a * q.a, p.b * q.b); }
GELU_HD GpuPair fma(GpuPair p, GpuPair q, GpuPair r) {
  return GpuPair(::fmaf(p.a, q.a, r.a), ::fmaf(p.b, q.b, r.b));
}
#endif
GELU_HD GpuPair operator-(GpuPair p) { return GpuPair(-p.a, -p.b); }
GELU_HD GpuPair operator-(GpuPair p, GpuPair q) { return p + -q; }
GELU_HD GpuPair fabs(GpuPair p) { return GpuPair(::fabsf(p.a), ::fabsf(p.b)); }
GELU_HD GpuPairMask operator<(GpuPair p, GpuPair q) { return {p.a < q.a, p.b < q.b}; }
GELU_HD GpuPairMask operator<=(GpuPair p, GpuPair q) { return {p.a <= q.a, p.b <= q.b}; }
GELU_HD GpuPairMask operator>=(GpuPair p, GpuPair q) { return {p.a >= q.a, p.b >= q.b}; }
GELU_HD GpuPairMask operator==(GpuPair p, GpuPair q) { return {p.a == q.a, p.b == q.b}; }
GELU_HD GpuPairMask operator&(GpuPairMask m, GpuPairMask n) {
  return {static_cast<bool>(m.a & n.a), static_cast<bool>(m.b & n.b)};
}
GELU_HD GpuPairMask operator|(GpuPairMask m, GpuPairMask n) {
  return {static_cast<bool>(m.a | n.a), static_cast<bool>(m.b | n.b)};
}
GELU_HD GpuPairMask& operator&=(GpuPairMask& m, GpuPairMask n) { return m = m & n; }
GELU_HD GpuPair select(GpuPairMask m, GpuPair p, GpuPair q) {
  return GpuPair(m.a ? p.a : q.a, m.b ? p.b : q.b);
}
GELU_HD GpuPair gpu_exp2(GpuPair u) { return GpuPair(math::gpu_exp2(u.a), math::gpu_exp2(u.b)); }
GELU_HD GpuPair gpu_reciprocal(GpuPair d) {
  return GpuPair(math::gpu_reciprocal(d.a), math::gpu_reciprocal(d.b));
}

GELU_HD GpuPair positive_part(GpuPair x) {
  return GpuPair(math::positive_part(x.a), math::positive_part(x.b));
}

}  // namespace gpu_lanes
}  // namespace gelu_ext

#endif  // GELU_DEVICE_FORMS
