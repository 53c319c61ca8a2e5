// AVX-512 lanes (cpu/lanes.h): 8 doubles, and conversions from and to the storage types.
// Included only by kernels_avx512.cpp, under its AVX-512 target pragma.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "lanes.h"
#include "table_loads.h"

#define GELU_SIMD inline __attribute__((always_inline))

namespace gelu_ext {
namespace cpu {
namespace avx512 {

constexpr CpuIsa kIsa = kIsaAvx512;

struct Mask {
  __mmask8 m;
};

struct Vec {
  __m512d v;
  Vec() = default;
  Vec(double d) : v(_mm512_set1_pd(d)) {}  // NOLINT: constants broadcast implicitly
  explicit Vec(__m512d x) : v(x) {}
};

GELU_SIMD Vec operator+(Vec a, Vec b) { return Vec(_mm512_add_pd(a.v, b.v)); }
GELU_SIMD Vec operator-(Vec a, Vec b) { return Vec(_mm512_sub_pd(a.v, b.v)); }
GELU_SIMD Vec operator*(Vec a, Vec b) { return Vec(_mm512_mul_pd(a.v, b.v)); }
GELU_SIMD Vec operator/(Vec a, Vec b) { return Vec(_mm512_div_pd(a.v, b.v)); }
GELU_SIMD Vec operator-(Vec a) { return Vec(_mm512_xor_pd(a.v, _mm512_set1_pd(-0.0))); }
GELU_SIMD Vec fma(Vec a, Vec b, Vec c) { return Vec(_mm512_fmadd_pd(a.v, b.v, c.v)); }
// |v| with the sign of x: one bitwise select (sign bit ? x : v).
GELU_SIMD Vec with_sign_of(Vec v, Vec x) {
  return Vec(_mm512_castsi512_pd(_mm512_ternarylogic_epi64(
      _mm512_set1_epi64(INT64_MIN), _mm512_castpd_si512(x.v), _mm512_castpd_si512(v.v), 0xCA)));
}
GELU_SIMD Vec fabs(Vec a) { return Vec(_mm512_abs_pd(a.v)); }
// Ordered comparisons: false where either side is NaN, like the scalar operators.
GELU_SIMD Mask operator<(Vec a, Vec b) { return Mask{_mm512_cmp_pd_mask(a.v, b.v, _CMP_LT_OQ)}; }
GELU_SIMD Mask operator>(Vec a, Vec b) { return Mask{_mm512_cmp_pd_mask(a.v, b.v, _CMP_GT_OQ)}; }
GELU_SIMD Mask operator>=(Vec a, Vec b) { return Mask{_mm512_cmp_pd_mask(a.v, b.v, _CMP_GE_OQ)}; }
GELU_SIMD Mask operator==(Vec a, Vec b) { return Mask{_mm512_cmp_pd_mask(a.v, b.v, _CMP_EQ_OQ)}; }
// Unordered: true where either side is NaN, like the scalar operator.
GELU_SIMD Mask operator!=(Vec a, Vec b) { return Mask{_mm512_cmp_pd_mask(a.v, b.v, _CMP_NEQ_UQ)}; }
GELU_SIMD Mask operator&(Mask a, Mask b) { return Mask{static_cast<__mmask8>(a.m & b.m)}; }
GELU_SIMD Vec select(Mask c, Vec a, Vec b) { return Vec(_mm512_mask_blend_pd(c.m, b.v, a.v)); }

// the math's at_least and at_most: max and min return their second operand where either is
// NaN, so x goes second.
GELU_SIMD Vec at_least(Vec x, double floor) {
  return Vec(_mm512_max_pd(_mm512_set1_pd(floor), x.v));
}
GELU_SIMD Vec at_most(Vec x, double ceiling) {
  return Vec(_mm512_min_pd(_mm512_set1_pd(ceiling), x.v));
}
GELU_SIMD Vec at_most_each(Vec x, Vec ceiling) { return Vec(_mm512_min_pd(ceiling.v, x.v)); }

// value * 2^k, k in the low bits of shifted = k + 1.5 * 2^52 (see math/common.h).
GELU_SIMD Vec times_pow2(Vec value, Vec shifted) {
  const __m512i k = _mm512_sub_epi64(_mm512_castpd_si512(shifted.v),
                                     _mm512_set1_epi64(0x4338000000000000 - 1023));
  return Vec(_mm512_mul_pd(value.v, _mm512_castsi512_pd(_mm512_slli_epi64(k, 52))));
}

// the math's times_pow2_normal: one scaling instruction by k (exact, the product being normal).
GELU_SIMD Vec times_pow2_normal(Vec value, Vec /*shifted*/, Vec k) {
  return Vec(_mm512_scalef_pd(value.v, k.v));
}

// floor(log2 x) for normal positive x (the double-double path's interval index).
GELU_SIMD Vec binary_exponent(Vec x) { return Vec(_mm512_getexp_pd(x.v)); }
// the math's table_row and table_entry: each lane's row (a small non-negative integer) as a
// 64-bit permute index, then the column's entry for each lane, one permute across its 16 rows.
struct TableRow {
  __m512i v;
};
GELU_SIMD TableRow table_row(Vec row) { return TableRow{_mm512_cvttpd_epi64(row.v)}; }
GELU_SIMD Vec table_entry(const double (&column)[16], TableRow row) {
  return Vec(_mm512_permutex2var_pd(_mm512_loadu_pd(column), row.v, _mm512_loadu_pd(column + 8)));
}

// ---------------------------------------------------------------------------------------------
// 16 floats, for the narrow path of float16 and bfloat16 data.

struct MaskF {
  __mmask16 m;
};

struct VecF {
  __m512 v;
  VecF() = default;
  VecF(float f) : v(_mm512_set1_ps(f)) {}  // NOLINT: constants broadcast implicitly
  explicit VecF(__m512 x) : v(x) {}
};

GELU_SIMD VecF operator+(VecF a, VecF b) { return VecF(_mm512_add_ps(a.v, b.v)); }
GELU_SIMD VecF operator-(VecF a, VecF b) { return VecF(_mm512_sub_ps(a.v, b.v)); }
GELU_SIMD VecF operator*(VecF a, VecF b) { return VecF(_mm512_mul_ps(a.v, b.v)); }
GELU_SIMD VecF operator/(VecF a, VecF b) { return VecF(_mm512_div_ps(a.v, b.v)); }
GELU_SIMD VecF operator-(VecF a) { return VecF(_mm512_xor_ps(a.v, _mm512_set1_ps(-0.0f))); }
GELU_SIMD VecF fma(VecF a, VecF b, VecF c) { return VecF(_mm512_fmadd_ps(a.v, b.v, c.v)); }
GELU_SIMD VecF fabs(VecF a) { return VecF(_mm512_abs_ps(a.v)); }
GELU_SIMD MaskF operator<(VecF a, VecF b) { return MaskF{_mm512_cmp_ps_mask(a.v, b.v, _CMP_LT_OQ)}; }
GELU_SIMD MaskF operator>(VecF a, VecF b) { return MaskF{_mm512_cmp_ps_mask(a.v, b.v, _CMP_GT_OQ)}; }
GELU_SIMD MaskF operator>=(VecF a, VecF b) { return MaskF{_mm512_cmp_ps_mask(a.v, b.v, _CMP_GE_OQ)}; }
// Unordered: true where either side is NaN, like the scalar operator.
GELU_SIMD MaskF operator!=(VecF a, VecF b) { return MaskF{_mm512_cmp_ps_mask(a.v, b.v, _CMP_NEQ_UQ)}; }
GELU_SIMD MaskF operator==(VecF a, VecF b) { return MaskF{_mm512_cmp_ps_mask(a.v, b.v, _CMP_EQ_OQ)}; }
GELU_SIMD MaskF operator<=(VecF a, VecF b) { return MaskF{_mm512_cmp_ps_mask(a.v, b.v, _CMP_LE_OQ)}; }
GELU_SIMD MaskF operator&(MaskF a, MaskF b) { return MaskF{static_cast<__mmask16>(a.m & b.m)}; }
GELU_SIMD MaskF operator|(MaskF a, MaskF b) { return MaskF{static_cast<__mmask16>(a.m | b.m)}; }
GELU_SIMD MaskF& operator&=(MaskF& a, MaskF b) { return a = a & b; }
GELU_SIMD VecF select(MaskF c, VecF a, VecF b) { return VecF(_mm512_mask_blend_ps(c.m, b.v, a.v)); }
GELU_SIMD VecF at_most_each(VecF x, VecF ceiling) { return VecF(_mm512_min_ps(ceiling.v, x.v)); }

// value * 2^k, k in the low bits of shifted = k + 1.5 * 2^23 (see math/common.h).
GELU_SIMD VecF times_pow2(VecF value, VecF shifted) {
  const __m512i k = _mm512_sub_epi32(_mm512_castps_si512(shifted.v),
                                     _mm512_set1_epi32(0x4B400000 - 127));
  return VecF(_mm512_mul_ps(value.v, _mm512_castsi512_ps(_mm512_slli_epi32(k, 23))));
}

// 1/d to 2^-28: the 14-bit estimate refined by one Newton step.
GELU_SIMD VecF approximate_reciprocal(VecF d) {
  const __m512 y = _mm512_rcp14_ps(d.v);
  return VecF(_mm512_fmadd_ps(y, _mm512_fnmadd_ps(d.v, y, _mm512_set1_ps(1.0f)), y));
}

// The relative-bound forms' exponential and reciprocal (math/narrow16.h, GpuNarrowPass), within
// the errors their bound allows the GPU's ex2.approx and rcp.approx: 2 and 1 units in the last
// place from the correctly rounded result (tools/check_cpu_relative.cpp checks both at every
// float argument they take).
// 2^u for u in [-126, 0]: 2^k 2^r, k = u rounded to an integer, r = u - k exact in [-1/2, 1/2].
GELU_SIMD VecF gpu_exp2(VecF u) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: u + kRound is k + kRound
  const VecF shifted = u + VecF(kRound);
  const VecF r = u - (shifted - VecF(kRound));
  return times_pow2(math::horner(r, math::kRelativeExp2Poly_host), shifted);
}
GELU_SIMD VecF gpu_reciprocal(VecF d) { return approximate_reciprocal(d); }
// x for x > 0, else -0 (+0 for +0): max(-0, x) keeps its second operand unless the first is larger.
GELU_SIMD VecF positive_part(VecF x) { return VecF(_mm512_max_ps(_mm512_set1_ps(-0.0f), x.v)); }

// 16 lanes of the narrow path (float16, bfloat16).
struct NarrowLanes {
  using F = VecF;
  using Bits = __m256i;  // 16 x 16-bit
  static constexpr int kWidth = 16;
  // loops.h's redo queue: first + j for each lane j set in mask, to out[0, popcount). The
  // compress stays in registers (a compress to memory is microcoded on some CPUs).
  GELU_SIMD static int append_lanes(int32_t* out, int32_t first, uint32_t mask) {
    const __m512i lanes =
        _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(first));
    _mm512_storeu_si512(out, _mm512_maskz_compress_epi32(static_cast<__mmask16>(mask), lanes));
    return __builtin_popcount(mask);
  }

  GELU_SIMD static VecF load(const Float16* p) {
    return VecF(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
  }
  GELU_SIMD static VecF load(const BFloat16* p) {
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return VecF(_mm512_castsi512_ps(_mm512_slli_epi32(wide, 16)));
  }
  // Rounded to nearest even in the 16-bit type (NaN: 0x7FC0 for bfloat16).
  GELU_SIMD static Bits round(As<Float16>, VecF v) {
    return _mm512_cvtps_ph(v.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  GELU_SIMD static Bits round(As<BFloat16>, VecF v) {
    const __m512i u = _mm512_castps_si512(v.v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, lsb), _mm512_set1_epi32(0x7FFF)), 16);
    r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v.v, v.v, _CMP_UNORD_Q), _mm512_set1_epi32(0x7FC0));
    return _mm512_cvtepi32_epi16(r);
  }
  // Bit j set where [lo, hi] may contain a rounding boundary of the 16-bit type, so that values
  // in it could round differently (lo and hi are floats; every boundary is a float too).
  // float16: where lo and hi round apart.
  GELU_SIMD static uint32_t may_round_apart(As<Float16> type, VecF lo, VecF hi) {
    return _mm256_cmpneq_epi16_mask(round(type, lo), round(type, hi));
  }
  // bfloat16: float bit patterns order like magnitudes, and the boundaries are the patterns
  // k * 2^16 + 0x8000. (u + 0x7FFF) >> 16 counts the boundaries below pattern u, and
  // (u + 0x8000) >> 16 those up to u: equal counts for the smaller and the larger end mean that
  // none lies between them. Ends of opposite signs always count as possibly rounding apart.
  GELU_SIMD static uint32_t may_round_apart(As<BFloat16>, VecF lo, VecF hi) {
    const __m512i a = _mm512_castps_si512(lo.v), b = _mm512_castps_si512(hi.v);
    const __m512i smaller = _mm512_min_epu32(a, b), larger = _mm512_max_epu32(a, b);
    const __m512i below_smaller = _mm512_srli_epi32(_mm512_add_epi32(smaller, _mm512_set1_epi32(0x7FFF)), 16);
    const __m512i up_to_larger = _mm512_srli_epi32(_mm512_add_epi32(larger, _mm512_set1_epi32(0x8000)), 16);
    return _mm512_cmpneq_epi32_mask(below_smaller, up_to_larger);
  }
  // The same, and every lane not set in `qualified`.
  template <class T>
  GELU_SIMD static uint32_t may_round_apart(As<T> type, VecF lo, VecF hi, MaskF qualified) {
    return may_round_apart(type, lo, hi) | static_cast<__mmask16>(~qualified.m);
  }
  // That, and hi rounded to the 16-bit type, which in the lanes that pass the test is also the
  // rounding of every value in [lo, hi] (NaN aside: not for lanes that may pass with NaN ends).
  template <class T>
  GELU_SIMD static uint32_t round_interval(As<T> type, VecF lo, VecF hi, MaskF qualified,
                                           Bits& rounded) {
    rounded = round_sure(type, hi);
    return may_round_apart(type, lo, hi, qualified);
  }
  // float16: as round. bfloat16: (u + 0x8000) >> 16 rounds pattern u half away from zero, which
  // is to nearest where no boundary (no half-way pattern) lies between the ends.
  GELU_SIMD static Bits round_sure(As<Float16> type, VecF v) { return round(type, v); }
  GELU_SIMD static Bits round_sure(As<BFloat16>, VecF v) {
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(
        _mm512_add_epi32(_mm512_castps_si512(v.v), _mm512_set1_epi32(0x8000)), 16));
  }
  // The relative-bound forms' test and rounding (math/narrow16.h, GpuNarrowPass): the lanes whose
  // value v, within kGpuNarrowRelativeError of the exact value, surely rounds as it does, and
  // every lane of v rounded, to nearest as it is in the lanes `settled` (whose v needs no test).
  // bfloat16: no rounding boundary within kGpuUlps units in the last place of v, on the bits
  // as gpu_rounds_surely tests it (v rounded half away from zero, as round_sure: that differs
  // from to-nearest-even only at boundaries, which fail the test). float16: v -+ the bound round
  // alike, the upper end stored (the conversion sees float16's subnormal grid, which a test on
  // the bits would not); the bound is 0 in the settled lanes. Both: v at least
  // kGpuNarrowSmallest, or 0, below which the bound may fail.
  GELU_SIMD static MaskF relative_rounds_surely(As<BFloat16>, VecF v, MaskF settled,
                                                Bits& rounded) {
    const __m512i u = _mm512_castps_si512(v.v);
    constexpr uint32_t kUlps = math::kGpuUlps<true>;
    const __m512i offset = _mm512_slli_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(int(kUlps - 0x8000u))), 16);
    const __mmask16 near = _mm512_cmplt_epu32_mask(offset, _mm512_set1_epi32(int((2 * kUlps + 1) << 16)));
    rounded = round_sure(As<BFloat16>(), v);
    (void)settled;
    return MaskF{static_cast<__mmask16>(~near)} & sized(v);
  }
  GELU_SIMD static MaskF relative_rounds_surely(As<Float16> type, VecF v, MaskF settled,
                                                Bits& rounded) {
    const VecF bound =
        select(settled, VecF(0.0f), fabs(v) * VecF(math::kGpuNarrowRelativeError));
    rounded = round(type, v + bound);
    const __mmask16 apart = _mm256_cmpneq_epi16_mask(round(type, v - bound), rounded);
    return MaskF{static_cast<__mmask16>(~apart)} & sized(v);
  }
  GELU_SIMD static MaskF sized(VecF v) {
    return (fabs(v) >= VecF(math::kGpuNarrowSmallest)) | (v == VecF(0.0f));
  }
  // The lanes where x's bits below the 16-bit type's last bit are half their range: x is a
  // rounding boundary of the type.
  template <class T>
  GELU_SIMD static MaskF is_boundary(As<T>, VecF x) {
    constexpr uint32_t kLow = std::is_same<T, BFloat16>::value ? 0xFFFFu : 0x1FFFu;
    return MaskF{static_cast<__mmask16>(~_mm512_cmpneq_epi32_mask(
        _mm512_and_si512(_mm512_castps_si512(x.v), _mm512_set1_epi32(int(kLow))),
        _mm512_set1_epi32(int((kLow + 1) / 2))))};
  }
  template <class T>
  GELU_SIMD static void store(T* p, Bits bits) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bits);
  }

  // The entries of a table indexed by 16-bit inputs' bits, one load per lane (table_loads.h):
  // on Zen 4 the gathers these loads replace took 1.2 to 2 times as long.
  template <class T>
  GELU_SIMD static Bits lookup(const uint16_t* table, const T* p) {
    uint16_t index[16];
    std::memcpy(index, p, sizeof index);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(eight_entries(table, index)),
                                   eight_entries(table, index + 8), 1);
  }
  // Tables of float pairs {a, b}: the pairs of 16 inputs loaded.
  template <class Pair, class T>
  GELU_SIMD static void lookup_bounded(const Pair* table, const T* p, VecF& a, VecF& b) {
    static_assert(sizeof(Pair) == 8, "a pair of floats");
    uint16_t index[16];
    std::memcpy(index, p, sizeof index);
    const double* pairs = reinterpret_cast<const double*>(table);
    __m256 a_low, b_low, a_high, b_high;
    eight_pairs(pairs, index, a_low, b_low);
    eight_pairs(pairs, index + 8, a_high, b_high);
    a = VecF(_mm512_insertf32x8(_mm512_castps256_ps512(a_low), a_high, 1));
    b = VecF(_mm512_insertf32x8(_mm512_castps256_ps512(b_low), b_high, 1));
  }
};

// ---------------------------------------------------------------------------------------------
// 8 doubles, for everything else.

struct Lanes {
  using V = Vec;
  using Narrow = NarrowLanes;
  static constexpr int kWidth = 8;
  GELU_SIMD static int append_lanes(int32_t* out, int32_t first, uint32_t mask) {
    const __m256i lanes =
        _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(first));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                        _mm256_maskz_compress_epi32(static_cast<__mmask8>(mask), lanes));
    return __builtin_popcount(mask);
  }

  // float64 pair path (math/f64_pair.h): the value is the result; its error is 0 or inf.
  using F = Vec;
  GELU_SIMD static Vec round(As<double>, Vec v) { return v; }
  GELU_SIMD static uint32_t may_round_apart(As<double>, Vec a, Vec b) {
    return _mm512_cmp_pd_mask(a.v, b.v, _CMP_NEQ_UQ);
  }

  GELU_SIMD static Vec load(const double* p) { return Vec(_mm512_loadu_pd(p)); }
  GELU_SIMD static Vec load(const float* p) { return Vec(_mm512_cvtps_pd(_mm256_loadu_ps(p))); }
  GELU_SIMD static Vec load(const Float16* p) {
    return Vec(_mm512_cvtps_pd(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))));
  }
  GELU_SIMD static Vec load(const BFloat16* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return Vec(_mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_slli_epi32(wide, 16))));
  }

  GELU_SIMD static void store(double* p, Vec v) { _mm512_storeu_pd(p, v.v); }
  GELU_SIMD static void store(float* p, Vec v) { _mm256_storeu_ps(p, _mm512_cvtpd_ps(v.v)); }
  GELU_SIMD static void store(Float16* p, Vec v) {
    const __m128i h = _mm256_cvtps_ph(round_to_odd(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), h);
  }
  GELU_SIMD static void store(BFloat16* p, Vec v) {
    // Round to nearest even in the top 16 bits of the float; NaN becomes 0x7FC0.
    const __m256 f = round_to_odd(v);
    const __m256i u = _mm256_castps_si256(f);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, lsb), _mm256_set1_epi32(0x7FFF)), 16);
    r = _mm256_mask_mov_epi32(r, _mm256_cmp_ps_mask(f, f, _CMP_UNORD_Q), _mm256_set1_epi32(0x7FC0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtepi32_epi16(r));
  }

  // the math's round_to_odd_float, 8 at a time: toward zero, then the last bit set if inexact.
  GELU_SIMD static __m256 round_to_odd(Vec v) {
    const __m256 toward_zero = _mm512_cvt_roundpd_ps(v.v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask8 inexact = _mm512_cmp_pd_mask(_mm512_cvtps_pd(toward_zero), v.v, _CMP_NEQ_OQ);
    const __m256i bits = _mm256_castps_si256(toward_zero);
    return _mm256_castsi256_ps(_mm256_mask_or_epi32(bits, inexact, bits, _mm256_set1_epi32(1)));
  }
};

}  // namespace avx512
}  // namespace cpu
}  // namespace gelu_ext
