// A stand-in for the AVX-512 intrinsics that csrc/cpu/simd_avx512.h uses, in portable C++ on
// GCC's generic vectors, so that the AVX-512 kernels build and run on a CPU without AVX-512
// (tests/test_cpu_avx512_emulated.py). Included before everything else (g++ -include): it takes
// <immintrin.h> first, then renames each of those intrinsics to its function here. AVX2 and F16C
// intrinsics stay native. An intrinsic missing here makes the build fail ("target specific option
// mismatch"), never a silent fallback.
//
// Each function follows Intel's definition lane by lane, including NaN, signed zero and
// out-of-range behaviour where the kernels can reach it. One exception: _mm512_rcp14_ps, whose
// exact bits are a hardware table, is 1/x cut to its top 14 significand bits, within the 2^-14
// relative error Intel documents (the kernels' bounds allow for that, not for particular bits).
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace gelu_avx512_emulation {

typedef int32_t v16si __attribute__((vector_size(64)));
typedef uint32_t v16su __attribute__((vector_size(64)));
typedef int64_t v8di __attribute__((vector_size(64)));
typedef uint64_t v8du __attribute__((vector_size(64)));
typedef int32_t v8si __attribute__((vector_size(32)));
typedef int16_t v16hi __attribute__((vector_size(32)));
typedef int16_t v8hi __attribute__((vector_size(16)));

#define GELU_EMU inline __attribute__((always_inline))

template <class To, class From>
GELU_EMU To bits(From from) {
  static_assert(sizeof(To) == sizeof(From), "same size");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

// Arithmetic, lane by lane (generic vectors round each operation once, and -ffp-contract=off
// keeps a * b + c unfused).
GELU_EMU __m512 add_ps(__m512 a, __m512 b) { return a + b; }
GELU_EMU __m512 sub_ps(__m512 a, __m512 b) { return a - b; }
GELU_EMU __m512 mul_ps(__m512 a, __m512 b) { return a * b; }
GELU_EMU __m512 div_ps(__m512 a, __m512 b) { return a / b; }
GELU_EMU __m512d add_pd(__m512d a, __m512d b) { return a + b; }
GELU_EMU __m512d sub_pd(__m512d a, __m512d b) { return a - b; }
GELU_EMU __m512d mul_pd(__m512d a, __m512d b) { return a * b; }
GELU_EMU __m512d div_pd(__m512d a, __m512d b) { return a / b; }
GELU_EMU __m512 fmadd_ps(__m512 a, __m512 b, __m512 c) {
  for (int i = 0; i < 16; ++i) a[i] = std::fma(a[i], b[i], c[i]);
  return a;
}
GELU_EMU __m512 fnmadd_ps(__m512 a, __m512 b, __m512 c) {  // -(a b) + c, rounded once
  for (int i = 0; i < 16; ++i) a[i] = std::fma(-a[i], b[i], c[i]);
  return a;
}
GELU_EMU __m512d fmadd_pd(__m512d a, __m512d b, __m512d c) {
  for (int i = 0; i < 8; ++i) a[i] = std::fma(a[i], b[i], c[i]);
  return a;
}
// min and max return the second operand where either is NaN or both are zeros.
GELU_EMU __m512 min_ps(__m512 a, __m512 b) {
  for (int i = 0; i < 16; ++i) a[i] = a[i] < b[i] ? a[i] : b[i];
  return a;
}
GELU_EMU __m512d min_pd(__m512d a, __m512d b) {
  for (int i = 0; i < 8; ++i) a[i] = a[i] < b[i] ? a[i] : b[i];
  return a;
}
GELU_EMU __m512 max_ps(__m512 a, __m512 b) {
  for (int i = 0; i < 16; ++i) a[i] = a[i] > b[i] ? a[i] : b[i];
  return a;
}
GELU_EMU __m512d max_pd(__m512d a, __m512d b) {
  for (int i = 0; i < 8; ++i) a[i] = a[i] > b[i] ? a[i] : b[i];
  return a;
}
GELU_EMU __m512 abs_ps(__m512 a) { return bits<__m512>(bits<v16su>(a) & 0x7FFFFFFFu); }
GELU_EMU __m512d abs_pd(__m512d a) {
  return bits<__m512d>(bits<v8du>(a) & 0x7FFFFFFFFFFFFFFFull);
}
GELU_EMU __m512 xor_ps(__m512 a, __m512 b) { return bits<__m512>(bits<v16si>(a) ^ bits<v16si>(b)); }
GELU_EMU __m512d xor_pd(__m512d a, __m512d b) { return bits<__m512d>(bits<v8di>(a) ^ bits<v8di>(b)); }

// The 14-bit reciprocal estimate: see the note at the top.
GELU_EMU __m512 rcp14_ps(__m512 a) {
  for (int i = 0; i < 16; ++i) {
    const float r = static_cast<float>(1.0 / static_cast<double>(a[i]));
    a[i] = std::isfinite(r) && r != 0.0f ? bits<float>(bits<uint32_t>(r) & ~0x1FFu) : r;
  }
  return a;
}

// floor(log2 |x|) as a double: -inf at zero, +inf at infinity, NaN for NaN; subnormals by their
// true exponent.
GELU_EMU __m512d getexp_pd(__m512d a) {
  for (int i = 0; i < 8; ++i) a[i] = std::isnan(a[i]) ? a[i] : std::logb(std::fabs(a[i]));
  return a;
}

// x 2^floor(y), rounded once (the kernels' y are integers, of a range where 2^y is normal).
GELU_EMU __m512d scalef_pd(__m512d x, __m512d y) {
  for (int i = 0; i < 8; ++i)
    x[i] = std::isnan(y[i]) ? y[i] : std::ldexp(x[i], static_cast<int>(std::floor(y[i])));
  return x;
}

// Integers.
// Broadcasts (by assignment: 0.0 + v would lose the sign of -0.0).
template <class Vector, class Element>
GELU_EMU Vector broadcast(Element v) {
  Vector r;
  for (unsigned i = 0; i < sizeof(Vector) / sizeof(Element); ++i) r[i] = v;
  return r;
}
GELU_EMU __m512i set1_epi32(int v) { return bits<__m512i>(broadcast<v16si>(v)); }
GELU_EMU __m512i set1_epi64(long long v) { return bits<__m512i>(broadcast<v8di>(int64_t(v))); }
GELU_EMU __m512 set1_ps(float v) { return broadcast<__m512>(v); }
GELU_EMU __m512d set1_pd(double v) { return broadcast<__m512d>(v); }
GELU_EMU __m512i setr_epi32(int e0, int e1, int e2, int e3, int e4, int e5, int e6, int e7, int e8,
                            int e9, int e10, int e11, int e12, int e13, int e14, int e15) {
  return bits<__m512i>(v16si{e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12, e13, e14, e15});
}
GELU_EMU __m512i add_epi32(__m512i a, __m512i b) {
  return bits<__m512i>(bits<v16su>(a) + bits<v16su>(b));
}
GELU_EMU __m512i sub_epi32(__m512i a, __m512i b) {
  return bits<__m512i>(bits<v16su>(a) - bits<v16su>(b));
}
GELU_EMU __m512i sub_epi64(__m512i a, __m512i b) { return bits<__m512i>(bits<v8du>(a) - bits<v8du>(b)); }
GELU_EMU __m512i and_si512(__m512i a, __m512i b) { return a & b; }
// Shifts by a count of 32 (64) or more give 0.
GELU_EMU __m512i srli_epi32(__m512i a, unsigned count) {
  return count > 31 ? __m512i{} : bits<__m512i>(bits<v16su>(a) >> count);
}
GELU_EMU __m512i slli_epi32(__m512i a, unsigned count) {
  return count > 31 ? __m512i{} : bits<__m512i>(bits<v16su>(a) << count);
}
GELU_EMU __m512i slli_epi64(__m512i a, unsigned count) {
  return count > 63 ? __m512i{} : bits<__m512i>(bits<v8du>(a) << count);
}
GELU_EMU __m512i min_epu32(__m512i a, __m512i b) {
  v16su x = bits<v16su>(a), y = bits<v16su>(b);
  for (int i = 0; i < 16; ++i) x[i] = x[i] < y[i] ? x[i] : y[i];
  return bits<__m512i>(x);
}
GELU_EMU __m512i max_epu32(__m512i a, __m512i b) {
  v16su x = bits<v16su>(a), y = bits<v16su>(b);
  for (int i = 0; i < 16; ++i) x[i] = x[i] > y[i] ? x[i] : y[i];
  return bits<__m512i>(x);
}
// Each result bit: bit (a b c) of imm, a, b, c the operands' bits at that place.
GELU_EMU __m512i ternarylogic_epi64(__m512i a, __m512i b, __m512i c, int imm) {
  v8du x = bits<v8du>(a), y = bits<v8du>(b), z = bits<v8du>(c), r{};
  for (int i = 0; i < 8; ++i)
    for (int bit = 0; bit < 64; ++bit) {
      const int index = int((x[i] >> bit) & 1) << 2 | int((y[i] >> bit) & 1) << 1 |
                        int((z[i] >> bit) & 1);
      r[i] |= uint64_t((imm >> index) & 1) << bit;
    }
  return bits<__m512i>(r);
}

// Casts keep the bits.
GELU_EMU __m512 castsi512_ps(__m512i a) { return bits<__m512>(a); }
GELU_EMU __m512d castsi512_pd(__m512i a) { return bits<__m512d>(a); }
GELU_EMU __m512i castps_si512(__m512 a) { return bits<__m512i>(a); }
GELU_EMU __m512i castpd_si512(__m512d a) { return bits<__m512i>(a); }
GELU_EMU __m512 castps256_ps512(__m256 a) {  // the upper half undefined: zero here
  __m512 v{};
  std::memcpy(&v, &a, sizeof(a));
  return v;
}
GELU_EMU __m512 insertf32x8(__m512 a, __m256 b, int imm) {
  std::memcpy(reinterpret_cast<char*>(&a) + 32 * (imm & 1), &b, sizeof(b));
  return a;
}

// Memory.
GELU_EMU __m512d loadu_pd(const void* p) {
  __m512d v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
GELU_EMU void storeu_pd(void* p, __m512d v) { std::memcpy(p, &v, sizeof(v)); }
GELU_EMU void storeu_si512(void* p, __m512i v) { std::memcpy(p, &v, sizeof(v)); }

// Permutes: lane i takes lane index[i] of a, or of b where the next bit up is set.
GELU_EMU __m512d permutex2var_pd(__m512d a, __m512i index, __m512d b) {
  const v8di k = bits<v8di>(index);
  __m512d r;
  for (int i = 0; i < 8; ++i) r[i] = (k[i] & 8) ? b[k[i] & 7] : a[k[i] & 7];
  return r;
}

// Masks: bit i for lane i. Lane i of b where bit i of k is set, else of a.
template <class Lanes, class Vector>
GELU_EMU Vector blend(unsigned k, Vector a, Vector b) {
  Lanes r = bits<Lanes>(a);
  const Lanes x = bits<Lanes>(b);
  for (unsigned i = 0; i < sizeof(Lanes) / sizeof(x[0]); ++i) r[i] = (k >> i) & 1 ? x[i] : r[i];
  return bits<Vector>(r);
}
GELU_EMU __m512 mask_blend_ps(__mmask16 k, __m512 a, __m512 b) { return blend<__m512>(k, a, b); }
GELU_EMU __m512d mask_blend_pd(__mmask8 k, __m512d a, __m512d b) { return blend<__m512d>(k, a, b); }
GELU_EMU __m512i mask_mov_epi32(__m512i src, __mmask16 k, __m512i a) {
  return blend<v16si>(k, src, a);
}
// The lanes selected by k, packed into the low lanes in order; zeros above.
template <class Lanes, class Vector>
GELU_EMU Vector compress(unsigned k, Vector a) {
  const Lanes x = bits<Lanes>(a);
  Lanes r{};
  int n = 0;
  for (unsigned i = 0; i < sizeof(Lanes) / sizeof(x[0]); ++i)
    if ((k >> i) & 1) r[n++] = x[i];
  return bits<Vector>(r);
}
GELU_EMU __m512i maskz_compress_epi32(__mmask16 k, __m512i a) { return compress<v16si>(k, a); }

// Comparisons, with the predicates the kernels use.
GELU_EMU bool compare(double a, double b, int predicate) {
  const bool unordered = std::isnan(a) || std::isnan(b);
  switch (predicate) {
    case _CMP_EQ_OQ: return !unordered && a == b;
    case _CMP_LT_OQ: return !unordered && a < b;
    case _CMP_GT_OQ: return !unordered && a > b;
    case _CMP_LE_OQ: return !unordered && a <= b;
    case _CMP_GE_OQ: return !unordered && a >= b;
    case _CMP_NEQ_OQ: return !unordered && a != b;
    case _CMP_NEQ_UQ: return unordered || a != b;
    case _CMP_UNORD_Q: return unordered;
    default: __builtin_trap();  // a predicate this stand-in does not know
  }
}
// A mask of kLanes bits: bit i where is_set(i).
template <int kLanes, class Predicate>
GELU_EMU unsigned lane_mask(Predicate is_set) {
  unsigned k = 0;
  for (int i = 0; i < kLanes; ++i) k |= unsigned(is_set(i)) << i;
  return k;
}
GELU_EMU __mmask16 cmp_ps_mask(__m512 a, __m512 b, int predicate) {
  return lane_mask<16>([&](int i) { return compare(a[i], b[i], predicate); });
}
GELU_EMU __mmask8 cmp_pd_mask(__m512d a, __m512d b, int predicate) {
  return lane_mask<8>([&](int i) { return compare(a[i], b[i], predicate); });
}
GELU_EMU __mmask16 cmpneq_epi32_mask(__m512i a, __m512i b) {
  const v16si x = bits<v16si>(a), y = bits<v16si>(b);
  return lane_mask<16>([&](int i) { return x[i] != y[i]; });
}
GELU_EMU __mmask16 cmplt_epu32_mask(__m512i a, __m512i b) {
  const v16su x = bits<v16su>(a), y = bits<v16su>(b);
  return lane_mask<16>([&](int i) { return x[i] < y[i]; });
}

// Conversions.
GELU_EMU __m512d cvtps_pd(__m256 a) {
  __m512d r;
  for (int i = 0; i < 8; ++i) r[i] = a[i];
  return r;
}
GELU_EMU __m256 cvtpd_ps(__m512d a) {  // to nearest
  __m256 r;
  for (int i = 0; i < 8; ++i) r[i] = static_cast<float>(a[i]);
  return r;
}
// Toward zero (the only rounding the kernels ask for here): a finite double beyond the float
// range gives the largest float of its sign, not infinity.
GELU_EMU __m256 cvt_roundpd_ps(__m512d a, int rounding) {
  if ((rounding & 3) != _MM_FROUND_TO_ZERO) __builtin_trap();
  __m256 r;
  for (int i = 0; i < 8; ++i) {
    float f = static_cast<float>(a[i]);
    if (!std::isnan(a[i]) && !std::isinf(a[i]) && std::fabs(double(f)) > std::fabs(a[i]))
      f = std::nextafter(f, 0.0f);
    r[i] = f;
  }
  return r;
}
// Truncated toward zero; NaN and values out of range give INT64_MIN.
GELU_EMU __m512i cvttpd_epi64(__m512d a) {
  v8di r;
  for (int i = 0; i < 8; ++i)
    r[i] = std::isnan(a[i]) || std::fabs(a[i]) >= 0x1p63 ? INT64_MIN : static_cast<int64_t>(a[i]);
  return bits<__m512i>(r);
}
GELU_EMU __m512i cvtepu16_epi32(__m256i a) {
  const v16hi x = bits<v16hi>(a);
  v16si r;
  for (int i = 0; i < 16; ++i) r[i] = static_cast<uint16_t>(x[i]);
  return bits<__m512i>(r);
}
GELU_EMU __m256i cvtepi32_epi16(__m512i a) {  // truncated to the low 16 bits
  const v16si x = bits<v16si>(a);
  v16hi r;
  for (int i = 0; i < 16; ++i) r[i] = static_cast<int16_t>(x[i]);
  return bits<__m256i>(r);
}
// float16 through F16C, a half at a time.
GELU_EMU __m512 cvtph_ps(__m256i a) {
  __m128i half[2];
  std::memcpy(half, &a, sizeof(half));
  const __m256 low = _mm256_cvtph_ps(half[0]), high = _mm256_cvtph_ps(half[1]);
  __m512 r;
  std::memcpy(&r, &low, 32);
  std::memcpy(reinterpret_cast<char*>(&r) + 32, &high, 32);
  return r;
}
GELU_EMU __m256i cvtps_ph(__m512 a, int rounding) {
  if (rounding != (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)) __builtin_trap();
  __m256 half[2];
  std::memcpy(half, &a, sizeof(half));
  const __m128i low = _mm256_cvtps_ph(half[0], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m128i high = _mm256_cvtps_ph(half[1], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256i r;
  std::memcpy(&r, &low, 16);
  std::memcpy(reinterpret_cast<char*>(&r) + 16, &high, 16);
  return r;
}

// AVX-512VL forms on 256-bit registers.
GELU_EMU __mmask8 cmp_ps_mask_256(__m256 a, __m256 b, int predicate) {
  return lane_mask<8>([&](int i) { return compare(a[i], b[i], predicate); });
}
GELU_EMU __mmask16 cmpneq_epi16_mask_256(__m256i a, __m256i b) {
  const v16hi x = bits<v16hi>(a), y = bits<v16hi>(b);
  return lane_mask<16>([&](int i) { return x[i] != y[i]; });
}
GELU_EMU __m256i mask_mov_epi32_256(__m256i src, __mmask8 k, __m256i a) {
  return blend<v8si>(k, src, a);
}
GELU_EMU __m256i mask_or_epi32_256(__m256i src, __mmask8 k, __m256i a, __m256i b) {
  return mask_mov_epi32_256(src, k, bits<__m256i>(bits<v8si>(a) | bits<v8si>(b)));
}
GELU_EMU __m256i maskz_compress_epi32_256(__mmask8 k, __m256i a) { return compress<v8si>(k, a); }
GELU_EMU __m128i cvtepi32_epi16_256(__m256i a) {  // truncated to the low 16 bits
  const v8si x = bits<v8si>(a);
  v8hi r;
  for (int i = 0; i < 8; ++i) r[i] = static_cast<int16_t>(x[i]);
  return bits<__m128i>(r);
}

#undef GELU_EMU

}  // namespace gelu_avx512_emulation

// Every AVX-512 name simd_avx512.h uses, renamed (some are macros in GCC's headers).
#undef _mm512_add_ps
#define _mm512_add_ps gelu_avx512_emulation::add_ps
#undef _mm512_sub_ps
#define _mm512_sub_ps gelu_avx512_emulation::sub_ps
#undef _mm512_mul_ps
#define _mm512_mul_ps gelu_avx512_emulation::mul_ps
#undef _mm512_div_ps
#define _mm512_div_ps gelu_avx512_emulation::div_ps
#undef _mm512_add_pd
#define _mm512_add_pd gelu_avx512_emulation::add_pd
#undef _mm512_sub_pd
#define _mm512_sub_pd gelu_avx512_emulation::sub_pd
#undef _mm512_mul_pd
#define _mm512_mul_pd gelu_avx512_emulation::mul_pd
#undef _mm512_div_pd
#define _mm512_div_pd gelu_avx512_emulation::div_pd
#undef _mm512_fmadd_ps
#define _mm512_fmadd_ps gelu_avx512_emulation::fmadd_ps
#undef _mm512_fnmadd_ps
#define _mm512_fnmadd_ps gelu_avx512_emulation::fnmadd_ps
#undef _mm512_fmadd_pd
#define _mm512_fmadd_pd gelu_avx512_emulation::fmadd_pd
#undef _mm512_min_ps
#define _mm512_min_ps gelu_avx512_emulation::min_ps
#undef _mm512_min_pd
#define _mm512_min_pd gelu_avx512_emulation::min_pd
#undef _mm512_max_ps
#define _mm512_max_ps gelu_avx512_emulation::max_ps
#undef _mm512_max_pd
#define _mm512_max_pd gelu_avx512_emulation::max_pd
#undef _mm512_abs_ps
#define _mm512_abs_ps gelu_avx512_emulation::abs_ps
#undef _mm512_abs_pd
#define _mm512_abs_pd gelu_avx512_emulation::abs_pd
#undef _mm512_xor_ps
#define _mm512_xor_ps gelu_avx512_emulation::xor_ps
#undef _mm512_xor_pd
#define _mm512_xor_pd gelu_avx512_emulation::xor_pd
#undef _mm512_rcp14_ps
#define _mm512_rcp14_ps gelu_avx512_emulation::rcp14_ps
#undef _mm512_getexp_pd
#define _mm512_getexp_pd gelu_avx512_emulation::getexp_pd
#undef _mm512_scalef_pd
#define _mm512_scalef_pd gelu_avx512_emulation::scalef_pd
#undef _mm512_set1_epi32
#define _mm512_set1_epi32 gelu_avx512_emulation::set1_epi32
#undef _mm512_set1_epi64
#define _mm512_set1_epi64 gelu_avx512_emulation::set1_epi64
#undef _mm512_set1_ps
#define _mm512_set1_ps gelu_avx512_emulation::set1_ps
#undef _mm512_set1_pd
#define _mm512_set1_pd gelu_avx512_emulation::set1_pd
#undef _mm512_setr_epi32
#define _mm512_setr_epi32 gelu_avx512_emulation::setr_epi32
#undef _mm512_add_epi32
#define _mm512_add_epi32 gelu_avx512_emulation::add_epi32
#undef _mm512_sub_epi32
#define _mm512_sub_epi32 gelu_avx512_emulation::sub_epi32
#undef _mm512_sub_epi64
#define _mm512_sub_epi64 gelu_avx512_emulation::sub_epi64
#undef _mm512_and_si512
#define _mm512_and_si512 gelu_avx512_emulation::and_si512
#undef _mm512_srli_epi32
#define _mm512_srli_epi32 gelu_avx512_emulation::srli_epi32
#undef _mm512_slli_epi32
#define _mm512_slli_epi32 gelu_avx512_emulation::slli_epi32
#undef _mm512_slli_epi64
#define _mm512_slli_epi64 gelu_avx512_emulation::slli_epi64
#undef _mm512_min_epu32
#define _mm512_min_epu32 gelu_avx512_emulation::min_epu32
#undef _mm512_max_epu32
#define _mm512_max_epu32 gelu_avx512_emulation::max_epu32
#undef _mm512_ternarylogic_epi64
#define _mm512_ternarylogic_epi64 gelu_avx512_emulation::ternarylogic_epi64
#undef _mm512_castsi512_ps
#define _mm512_castsi512_ps gelu_avx512_emulation::castsi512_ps
#undef _mm512_castsi512_pd
#define _mm512_castsi512_pd gelu_avx512_emulation::castsi512_pd
#undef _mm512_castps_si512
#define _mm512_castps_si512 gelu_avx512_emulation::castps_si512
#undef _mm512_castps256_ps512
#define _mm512_castps256_ps512 gelu_avx512_emulation::castps256_ps512
#undef _mm512_insertf32x8
#define _mm512_insertf32x8 gelu_avx512_emulation::insertf32x8
#undef _mm512_castpd_si512
#define _mm512_castpd_si512 gelu_avx512_emulation::castpd_si512
#undef _mm512_loadu_pd
#define _mm512_loadu_pd gelu_avx512_emulation::loadu_pd
#undef _mm512_storeu_pd
#define _mm512_storeu_pd gelu_avx512_emulation::storeu_pd
#undef _mm512_storeu_si512
#define _mm512_storeu_si512 gelu_avx512_emulation::storeu_si512
#undef _mm512_permutex2var_pd
#define _mm512_permutex2var_pd gelu_avx512_emulation::permutex2var_pd
#undef _mm512_mask_blend_ps
#define _mm512_mask_blend_ps gelu_avx512_emulation::mask_blend_ps
#undef _mm512_mask_blend_pd
#define _mm512_mask_blend_pd gelu_avx512_emulation::mask_blend_pd
#undef _mm512_mask_mov_epi32
#define _mm512_mask_mov_epi32 gelu_avx512_emulation::mask_mov_epi32
#undef _mm512_maskz_compress_epi32
#define _mm512_maskz_compress_epi32 gelu_avx512_emulation::maskz_compress_epi32
#undef _mm512_cmp_ps_mask
#define _mm512_cmp_ps_mask gelu_avx512_emulation::cmp_ps_mask
#undef _mm512_cmp_pd_mask
#define _mm512_cmp_pd_mask gelu_avx512_emulation::cmp_pd_mask
#undef _mm512_cmpneq_epi32_mask
#define _mm512_cmpneq_epi32_mask gelu_avx512_emulation::cmpneq_epi32_mask
#undef _mm512_cmplt_epu32_mask
#define _mm512_cmplt_epu32_mask gelu_avx512_emulation::cmplt_epu32_mask
#undef _mm512_cvtps_pd
#define _mm512_cvtps_pd gelu_avx512_emulation::cvtps_pd
#undef _mm512_cvtpd_ps
#define _mm512_cvtpd_ps gelu_avx512_emulation::cvtpd_ps
#undef _mm512_cvt_roundpd_ps
#define _mm512_cvt_roundpd_ps gelu_avx512_emulation::cvt_roundpd_ps
#undef _mm512_cvttpd_epi64
#define _mm512_cvttpd_epi64 gelu_avx512_emulation::cvttpd_epi64
#undef _mm512_cvtepu16_epi32
#define _mm512_cvtepu16_epi32 gelu_avx512_emulation::cvtepu16_epi32
#undef _mm512_cvtepi32_epi16
#define _mm512_cvtepi32_epi16 gelu_avx512_emulation::cvtepi32_epi16
#undef _mm512_cvtph_ps
#define _mm512_cvtph_ps gelu_avx512_emulation::cvtph_ps
#undef _mm512_cvtps_ph
#define _mm512_cvtps_ph gelu_avx512_emulation::cvtps_ph
#undef _mm256_cmp_ps_mask
#define _mm256_cmp_ps_mask gelu_avx512_emulation::cmp_ps_mask_256
#undef _mm256_cmpneq_epi16_mask
#define _mm256_cmpneq_epi16_mask gelu_avx512_emulation::cmpneq_epi16_mask_256
#undef _mm256_mask_mov_epi32
#define _mm256_mask_mov_epi32 gelu_avx512_emulation::mask_mov_epi32_256
#undef _mm256_mask_or_epi32
#define _mm256_mask_or_epi32 gelu_avx512_emulation::mask_or_epi32_256
#undef _mm256_maskz_compress_epi32
#define _mm256_maskz_compress_epi32 gelu_avx512_emulation::maskz_compress_epi32_256
#undef _mm256_cvtepi32_epi16
#define _mm256_cvtepi32_epi16 gelu_avx512_emulation::cvtepi32_epi16_256
