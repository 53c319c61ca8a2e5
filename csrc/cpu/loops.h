// The CPU loops, written once for every lane type: each kernels_<isa>.cpp includes this after
// its lanes (a struct with V, kWidth, load and store) and its target pragma. A TensorIterator block
// is run through one contiguous vector loop: strided operands are gathered into small contiguous
// buffers first, and the last partial vector goes through a padded buffer, so every element takes
// the same code path and results never depend on layout or position.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "../gelu_math.h"
#include "../kernels.h"
#include "storage.h"

namespace gelu_ext {
namespace cpu {
namespace GELU_ISA {

constexpr int64_t kInputs16 = 65536;

// Every 16-bit bit pattern, in order.
inline const uint16_t* every_input16() {
  static uint16_t inputs[kInputs16];
  static const bool filled = [] {
    for (int64_t b = 0; b < kInputs16; ++b) inputs[b] = static_cast<uint16_t>(b);
    return true;
  }();
  (void)filled;
  return inputs;
}

// f and f' with their error bounds, as the narrow path computes them, for every 16-bit input of
// type T: built on first use, shared by the passes that look them up. Each value sits beside its
// bound, so that a lookup reads one cache line.
template <class N, Approximate A, class T>
struct NarrowTables {
  const math::Bounded<float>* f = nullptr;
  const math::Bounded<float>* d1 = nullptr;

  static NarrowTables get() {
    static math::Bounded<float> f_table[kInputs16], d1_table[kInputs16];
    static const bool built = [] {
      const T* x = reinterpret_cast<const T*>(every_input16());
      for (int64_t i = 0; i < kInputs16; i += N::kWidth) {
        math::Bounded<typename N::F> f, d1;
        math::narrow_value_and_derivative<A>(N::load(x + i), f, d1);
        N::store_pairs(f_table + i, f.value, f.error);
        N::store_pairs(d1_table + i, d1.value, d1.error);
      }
      return true;
    }();
    (void)built;
    return NarrowTables{f_table, d1_table};
  }
};

// A cell's cubic (gelu_math.h, narrow_cubic): c0 .. c3, a row of 16 bytes.
struct alignas(16) CubicRow {
  float c[4];
};

// The cubics of f (kD1 false) or f' in every cell, negative cells after the positive ones:
// built on first use from the float64 path's values at the cells' Chebyshev nodes.
template <Approximate A, bool kD1>
struct CubicTable {
  static const CubicRow* get() {
    static CubicRow rows[2 * math::kCellsPerSign];
    static const bool built = [] {
      for (uint32_t row = 0; row < 2 * uint32_t(math::kCellsPerSign); ++row) rows[row] = fit(row);
      return true;
    }();
    (void)built;
    return rows;
  }

  // Newton's divided differences at the nodes m + h u_j (m the midpoint, h the half-width, a
  // power of 2), expanded into powers of u, then of d = h u.
  static CubicRow fit(uint32_t row) {
    const uint32_t first = math::cell_first_bits(row);
    const double start = math::bit_cast<float>(first);
    const double midpoint = math::bit_cast<float>(math::cell_midpoint_bits(first));
    const double half = start < 0 ? start - midpoint : midpoint - start;
    const double u[4] = {-0.92387953251128674, -0.38268343236508978, 0.38268343236508978,
                         0.92387953251128674};  // cos((2j + 1) pi / 8)
    double c[4];
    for (int j = 0; j < 4; ++j) {
      const auto r = math::evaluate<A, true, kD1 ? math::kD1 : math::kF>(midpoint + half * u[j]);
      c[j] = kD1 ? r.d1 : r.f;
    }
    for (int k = 1; k < 4; ++k)
      for (int j = 3; j >= k; --j) c[j] = (c[j] - c[j - 1]) / (u[j] - u[j - k]);
    // c0 + (u - u0) (c1 + (u - u1) (c2 + (u - u2) c3)), from the inside out.
    double power[4] = {c[3], 0.0, 0.0, 0.0};
    for (int k = 2; k >= 0; --k) {
      for (int i = 3; i > 0; --i) power[i] = power[i - 1] - u[k] * power[i];
      power[0] = c[k] - u[k] * power[0];
    }
    CubicRow cubic;
    double scale = 1.0;
    for (int i = 0; i < 4; ++i, scale /= half) cubic.c[i] = static_cast<float>(power[i] * scale);
    return cubic;
  }
};

// The lanes' comparison results: a vector mask, or bool.
template <class N>
using LaneMask = decltype(std::declval<typename N::F>() < std::declval<typename N::F>());

// Two vectors of 16-bit data loaded, and their rounding tests' results stored, together: by the
// lanes' own load_pair and round_interval_pair where they have them (AVX2 bfloat16: one 32-byte
// load and one store, in an order of elements that the pair's store undoes), else a vector at a
// time. Bit j of the failures is element j's.
template <class N, class T, class = void>
struct Pairs {
  using F = typename N::F;
  using MaskF = LaneMask<N>;
  __attribute__((always_inline)) static void load(const T* p, F& first, F& second) {
    first = N::load(p);
    second = N::load(p + N::kWidth);
  }
  __attribute__((always_inline)) static uint32_t round_interval_and_store(
      T* out, const F (&low)[2], const F (&high)[2], const MaskF (&qualified)[2]) {
    uint32_t failed = 0;
    for (int h = 0; h < 2; ++h) {
      typename N::Bits rounded;
      failed |= N::round_interval(static_cast<const T*>(nullptr), low[h], high[h], qualified[h],
                                  rounded)
                << (h * N::kWidth);
      N::store(out + h * N::kWidth, rounded);
    }
    return failed;
  }
};
template <class N, class T>
struct Pairs<N, T,
             std::void_t<decltype(N::load_pair(std::declval<const T*>(),
                                               std::declval<typename N::F&>(),
                                               std::declval<typename N::F&>()))>> {
  using F = typename N::F;
  using MaskF = LaneMask<N>;
  __attribute__((always_inline)) static void load(const T* p, F& first, F& second) {
    N::load_pair(p, first, second);
  }
  __attribute__((always_inline)) static uint32_t round_interval_and_store(
      T* out, const F (&low)[2], const F (&high)[2], const MaskF (&qualified)[2]) {
    return N::round_interval_pair(out, low, high, qualified);
  }
};

template <class L, Pass P, Approximate A, class T>
struct Kernel {
  static constexpr bool kFloat64 = std::is_same<T, double>::value;
  // float64 data of the passes with a single path, in double lanes, and 16-bit data of those
  // with a narrow path, in float lanes: an error bound per result (gelu_math.h). float32 data,
  // and the rest, take the double path (or float64's double-double path).
  static constexpr bool kSingle = math::has_single_path<P, A, kFloat64>();
  static constexpr bool kNarrow = kSingle || ((std::is_same<T, Float16>::value ||
                                               std::is_same<T, BFloat16>::value) &&
                                              math::has_narrow_path<P>());
  using M = math::PassMath<P, A, kFloat64>;
  using NM = typename std::conditional<kSingle, math::SinglePassMath<P, A>,
                                       math::NarrowPassMath<P, A>>::type;
  // The lanes of those paths: float lanes (L::Narrow), or for float64's single path the double
  // lanes themselves, which also provide round and unsure.
  using N = typename std::conditional<kFloat64, L, typename L::Narrow>::type;
  static constexpr int kIn = M::kInputs, kOut = M::kOutputs, kOperands = kIn + kOut;
  // Elements per step: float lanes for the narrow path of 16-bit data, double lanes otherwise.
  static constexpr int kWidth = kNarrow ? N::kWidth : L::kWidth;

  // Elements whose narrow result failed its rounding test (or that lie outside the single
  // path's domain), queued and redone by the double (or double-double) path L::kWidth at a time
  // once the queue fills. The lanes write the indices of a vector's failed lanes with one
  // permute or compress.
  struct Redo {
    static constexpr int kCapacity = 256;
    // append_lanes may write past the count it adds: up to 16 entries (the widest lanes).
    int32_t index[kCapacity + 16];
    int count = 0;

    // lanes: of the vector at i, or of two (a pair step), a vector's worth at a time.
    __attribute__((always_inline)) void add(char* const* p, int64_t i, uint32_t lanes) {
      constexpr uint32_t kVector = uint32_t((uint64_t(1) << N::kWidth) - 1);
      for (; lanes != 0; lanes >>= N::kWidth, i += N::kWidth) {
        count += N::append_lanes(index + count, static_cast<int32_t>(i), lanes & kVector);
        if (__builtin_expect(count > kCapacity, 0)) flush(p);
      }
    }
    void flush(char* const* p) {
      for (int first = 0; first < count; first += L::kWidth) {
        const int group = count - first < L::kWidth ? count - first : L::kWidth;
        T buffer[kOperands][L::kWidth] = {};
        char* b[kOperands];
        for (int k = 0; k < kOperands; ++k) b[k] = reinterpret_cast<char*>(buffer[k]);
        for (int k = kOut; k < kOperands; ++k)
          for (int e = 0; e < group; ++e)
            std::memcpy(&buffer[k][e], p[k] + index[first + e] * int64_t(sizeof(T)), sizeof(T));
        vector(b, 0);
        for (int k = 0; k < kOut; ++k)
          for (int e = 0; e < group; ++e)
            std::memcpy(p[k] + index[first + e] * int64_t(sizeof(T)), &buffer[k][e], sizeof(T));
      }
      count = 0;
    }
  };

  // The narrow or single path (gelu_math.h): every lane is stored, and those whose rounding test
  // fails (single path: whose error is not 0) are redone by the double path.
  __attribute__((always_inline)) static void narrow_step(char* const* p, int64_t i, Redo& redo) {
    typename N::F in[kIn];
    math::Bounded<typename N::F> out[kOut];
    for (int k = 0; k < kIn; ++k) in[k] = N::load(reinterpret_cast<const T*>(p[kOut + k]) + i);
    NM::apply(in, out);
    store_or_redo(p, i, out, redo);
  }

  __attribute__((always_inline)) static void store_or_redo(char* const* p, int64_t i,
                                                           const math::Bounded<typename N::F>* out,
                                                           Redo& redo) {
    uint32_t failed = 0;
    for (int k = 0; k < kOut; ++k) {
      const T* tag = nullptr;
      N::store(reinterpret_cast<T*>(p[k]) + i, N::round(tag, out[k].value));
      // The single path's error is 0 or not: no interval to round.
      if constexpr (kSingle) failed |= N::unsure(tag, out[k].error, typename N::F(0.0f));
      else failed |= N::unsure(tag, out[k].value - out[k].error, out[k].value + out[k].error);
    }
    redo_failed(p, i, redo, failed);
  }

  __attribute__((always_inline)) static void redo_failed(char* const* p, int64_t i, Redo& redo,
                                                         uint32_t failed) {
    // Vectors with a failed lane are rare (on normal data from 1 in 180-280 for geglu to 1 in
    // 10-20 for the bias passes and float16 backward), so a branch around the queue costs a
    // misprediction on those, less than queueing on every vector: the 16-bit kernels 0-20%
    // faster on AVX2 (bfloat16 bias backward the most).
    if (__builtin_expect(failed == 0, 1)) return;
    redo.add(p, i, failed);
  }

  // 16-bit data of the bias passes: f or f' at x + b from the cells' cubics (CubicTable) instead
  // of the narrow functions, with the same rounding test and redo.
  static constexpr bool kInterpolate = kNarrow && !kSingle &&
                                       (P == Pass::kBiasForward || P == Pass::kBiasBackward);

  // Only lanes whose sum is exact in float and lies in a cell qualify for the rounding test (a
  // lane mask, cheaper than the narrow path's infinite error bound), and in the backward only
  // those whose bound is finite (not those of non-finite gradients). Qualified lanes have
  // finite ends, so the bits stored are the test's rounding of the interval [low, high].
  struct Interval {
    typename N::F low, high;
    LaneMask<N> qualified;
  };
  __attribute__((always_inline)) static Interval interpolate(const typename N::F (&in)[kIn],
                                                             const CubicRow* rows) {
    using F = typename N::F;
    using math::at_most_each;  // or the lanes' own
    constexpr bool kForward = P == Pass::kBiasForward;
    const F x = kForward ? in[0] : in[1], b = kForward ? in[1] : in[2], sum = x + b;
    F c[4], d;
    const auto in_cell = N::cell(rows, sum, c, d);
    const LaneMask<N> qualified = in_cell & math::sum_is_exact(x, b, sum);
    if constexpr (kForward) {
      // The ends in either order (the rounding test orders them). f also lies at most at
      // narrow_upper_limit, which caps the end farther from 0 where f > 0.
      F nearer_zero, farther;
      math::narrow_cubic_ends(math::narrow_cubic<false>(c, d).value, nearer_zero, farther);
      return Interval{nearer_zero, at_most_each(farther, math::narrow_upper_limit(sum)),
                      qualified};
    } else {
      const math::Bounded<F> out = math::narrow_cubic_product(in[0], c, d);
      const LaneMask<N> bounded = qualified & (out.error < F(__builtin_huge_valf()));
      return Interval{out.value - out.error, out.value + out.error, bounded};
    }
  }

  __attribute__((always_inline)) static void interpolate_step(char* const* p, int64_t i,
                                                              Redo& redo, const CubicRow* rows) {
    typename N::F in[kIn];
    for (int k = 0; k < kIn; ++k) in[k] = N::load(reinterpret_cast<const T*>(p[kOut + k]) + i);
    const Interval result = interpolate(in, rows);
    typename N::Bits rounded;
    const uint32_t failed = N::round_interval(static_cast<const T*>(nullptr), result.low,
                                              result.high, result.qualified, rounded);
    N::store(reinterpret_cast<T*>(p[0]) + i, rounded);
    redo_failed(p, i, redo, failed);
  }

  // Two vectors at once, through the lanes' paired loads and stores (Pairs, above).
  __attribute__((always_inline)) static void interpolate_pair(char* const* p, int64_t i,
                                                              Redo& redo, const CubicRow* rows) {
    using Pair = Pairs<N, T>;
    typename N::F in[2][kIn];
    for (int k = 0; k < kIn; ++k)
      Pair::load(reinterpret_cast<const T*>(p[kOut + k]) + i, in[0][k], in[1][k]);
    const Interval first = interpolate(in[0], rows), second = interpolate(in[1], rows);
    const uint32_t failed = Pair::round_interval_and_store(
        reinterpret_cast<T*>(p[0]) + i, {first.low, second.low}, {first.high, second.high},
        {first.qualified, second.qualified});
    redo_failed(p, i, redo, failed);
  }

  // 16-bit data have only 65536 inputs. The forward looks each result up in a table of all of
  // them, which this kernel's narrow path (with its double-path redo) computes on first use; the
  // other passes whose GELU argument is an input (backward, geglu) look up f and f' there with
  // their error bounds, as the narrow path computes them, and go on as it does. Either way the
  // results are the narrow path's, bit for bit.
  static constexpr bool kLookup = (std::is_same<T, Float16>::value ||
                                   std::is_same<T, BFloat16>::value) &&
                                  math::NarrowPassMath<P, A>::kArgument >= 0;

  static const uint16_t* result_table() {
    static uint16_t table[kInputs16 + 1];  // + 1: AVX-512 gathers read 4 bytes per entry
    static const bool built = [] {
      char* p[2] = {reinterpret_cast<char*>(table),
                    reinterpret_cast<char*>(const_cast<uint16_t*>(every_input16()))};
      Redo redo;
      for (int64_t i = 0; i < kInputs16; i += kWidth) narrow_step(p, i, redo);
      redo.flush(p);
      return true;
    }();
    (void)built;
    return table;
  }

  // The tables a step reads (none outside the lookups), fetched once per call.
  using Table = typename std::conditional<
      kInterpolate, const CubicRow*,
      typename std::conditional<P == Pass::kForward, const uint16_t*,
                                NarrowTables<N, A, T>>::type>::type;
  static Table table() {
    if constexpr (kInterpolate) return CubicTable<A, P == Pass::kBiasBackward>::get();
    else if constexpr (!kLookup) return Table{};
    else if constexpr (P == Pass::kForward) return result_table();
    else return NarrowTables<N, A, T>::get();
  }

  __attribute__((always_inline)) static void lookup_step(char* const* p, int64_t i, Redo& redo,
                                                         Table table) {
    const T* x = reinterpret_cast<const T*>(p[kOut + NM::kArgument]) + i;
    if constexpr (P == Pass::kForward) {
      N::store(reinterpret_cast<T*>(p[0]) + i, N::lookup(table, x));
    } else {
      typename N::F in[kIn];
      for (int k = 0; k < kIn; ++k) in[k] = N::load(reinterpret_cast<const T*>(p[kOut + k]) + i);
      math::Bounded<typename N::F> f{}, d1{}, out[kOut];
      if constexpr (NM::kNeedsF) N::lookup_pairs(table.f, x, f.value, f.error);
      if constexpr (NM::kNeedsD1) N::lookup_pairs(table.d1, x, d1.value, d1.error);
      NM::from_parts(in, f, d1, out);
      store_or_redo(p, i, out, redo);
    }
  }

  __attribute__((always_inline)) static void step(char* const* p, int64_t i, Redo& redo,
                                                  Table table) {
    if constexpr (kLookup) lookup_step(p, i, redo, table);
    else if constexpr (kInterpolate) interpolate_step(p, i, redo, table);
    else if constexpr (kNarrow) narrow_step(p, i, redo);
    else vector(p, i);
  }

  __attribute__((always_inline)) static void vector(char* const* p, int64_t i) {
    typename L::V in[kIn], out[kOut];
    for (int k = 0; k < kIn; ++k) in[k] = L::load(reinterpret_cast<const T*>(p[kOut + k]) + i);
    M::apply(in, out);
    for (int k = 0; k < kOut; ++k) L::store(reinterpret_cast<T*>(p[k]) + i, out[k]);
  }

  // Inputs are prefetched this far ahead: the loop spends long enough on each cache line that
  // the hardware prefetchers of some machines (virtual ones especially) fall behind.
  static constexpr int64_t kPrefetchBytes = 4096;

  // n elements of each operand, contiguous. Two vectors per step give the core two independent
  // dependency chains to interleave.
  // p is __restrict: the stores through the data pointers never write the array of pointers
  // itself, which the compiler would otherwise reload after every store (4 loads per loop step).
  static void contiguous(char* const* __restrict p, int64_t n) {
    Redo redo;
    const Table lookups = table();
    int64_t i = 0;
    for (; i + 2 * kWidth <= n; i += 2 * kWidth) {
      if constexpr (!kLookup)
        for (int k = kOut; k < kOperands; ++k)
          for (int64_t line = 0; line < 2 * kWidth * int64_t(sizeof(T)); line += 64)
            __builtin_prefetch(p[k] + i * sizeof(T) + kPrefetchBytes + line, 0, 3);
      if constexpr (kInterpolate) {
        interpolate_pair(p, i, redo, lookups);
      } else {
        step(p, i, redo, lookups);
        step(p, i + kWidth, redo, lookups);
      }
    }
    for (; i + kWidth <= n; i += kWidth) step(p, i, redo, lookups);
    redo.flush(p);
    if (i == n) return;
    T pad[kOperands][kWidth] = {};
    char* padded[kOperands];
    const int64_t rest = n - i;
    for (int k = 0; k < kOperands; ++k) {
      padded[k] = reinterpret_cast<char*>(pad[k]);
      if (k >= kOut) std::memcpy(pad[k], p[k] + i * sizeof(T), rest * sizeof(T));
    }
    step(padded, 0, redo, lookups);
    redo.flush(padded);
    for (int k = 0; k < kOut; ++k) std::memcpy(p[k] + i * sizeof(T), pad[k], rest * sizeof(T));
  }

  // One TensorIterator block: size0 elements with byte strides strides[0..kOperands), repeated
  // size1 times with strides[kOperands..2 kOperands).
  static void block(char** data, const int64_t* strides, int64_t size0, int64_t size1) {
    constexpr int64_t kChunk = 256;
    char* p[kOperands];
    bool contiguous_rows = true;
    for (int k = 0; k < kOperands; ++k) contiguous_rows &= strides[k] == sizeof(T);
    for (int64_t j = 0; j < size1; ++j) {
      for (int k = 0; k < kOperands; ++k) p[k] = data[k] + j * strides[kOperands + k];
      if (contiguous_rows) {
        // In runs short enough for the redo queue's 32-bit indices.
        constexpr int64_t kMaxRun = int64_t(1) << 30;
        for (int64_t start = 0; start < size0; start += kMaxRun) {
          char* run[kOperands];
          for (int k = 0; k < kOperands; ++k) run[k] = p[k] + start * int64_t(sizeof(T));
          contiguous(run, size0 - start < kMaxRun ? size0 - start : kMaxRun);
        }
        continue;
      }
      T buffer[kOperands][kChunk];
      char* b[kOperands];
      for (int k = 0; k < kOperands; ++k) b[k] = reinterpret_cast<char*>(buffer[k]);
      for (int64_t start = 0; start < size0; start += kChunk) {
        const int64_t n = size0 - start < kChunk ? size0 - start : kChunk;
        for (int k = kOut; k < kOperands; ++k)
          for (int64_t e = 0; e < n; ++e)
            std::memcpy(&buffer[k][e], p[k] + (start + e) * strides[k], sizeof(T));
        contiguous(b, n);
        for (int k = 0; k < kOut; ++k)
          for (int64_t e = 0; e < n; ++e)
            std::memcpy(p[k] + (start + e) * strides[k], &buffer[k][e], sizeof(T));
      }
    }
  }
};

// Bias gradients: adds `rows` rows of n values of type T (byte stride `stride`, rows
// `row_stride` apart) to running column sums, value i to column i * column_step (column_step 1,
// or 0 where the block runs down one column), row after row. float64 values are summed with their
// rounding errors kept in lo (a compensated sum); the others in plain double, whose rounding
// errors lie far below the final rounding to T. Each vector of sums is loaded and stored once
// for two rows (the loads and stores of the sums cost as much as the additions).
template <class L, class T>
struct ColumnSums {
  static constexpr bool kCompensated = std::is_same<T, double>::value;
  static constexpr int kWidth = L::kWidth;

  template <class V>
  static void add(V value, V& hi, V& lo) {
    if constexpr (kCompensated) {
      const math::DD<V> sum = math::two_sum(hi, value);
      hi = sum.hi;
      lo = lo + sum.lo;
    } else {
      hi = hi + value;
    }
  }

  static void run(const char* values, int64_t stride, int64_t n, int64_t rows, int64_t row_stride,
                  int64_t column_step, double* hi, double* lo) {
    // Whole vectors of contiguous columns; two rows per pass (a loop over the rows inside took
    // as long as a pass per row), then the last row of an odd count.
    const int64_t vectorized = stride == sizeof(T) && column_step == 1 ? n - n % kWidth : 0;
    for (int64_t r = 0; r < rows; r += 2) {
      const bool pair = r + 1 < rows;
      const T* first = reinterpret_cast<const T*>(values + r * row_stride);
      const T* second = pair ? reinterpret_cast<const T*>(values + (r + 1) * row_stride) : first;
      for (int64_t i = 0; i < vectorized; i += kWidth) {
        typename L::V h = L::load(hi + i), l = 0.0;
        if (kCompensated) l = L::load(lo + i);
        add(L::load(first + i), h, l);
        if (pair) add(L::load(second + i), h, l);
        L::store(hi + i, h);
        if (kCompensated) L::store(lo + i, l);
      }
    }
    // The rest, and every element of other layouts, converted a vector's worth at a time.
    for (int64_t r = 0; r < rows; ++r) {
      const char* row = values + r * row_stride;
      for (int64_t j = vectorized; j < n; j += kWidth) {
        const int64_t count = n - j < kWidth ? n - j : kWidth;
        T v[kWidth] = {};
        for (int64_t e = 0; e < count; ++e) std::memcpy(&v[e], row + (j + e) * stride, sizeof(T));
        double value[kWidth];
        L::store(value, L::load(v));
        for (int64_t e = 0; e < count; ++e) {
          add(value[e], hi[(j + e) * column_step], lo[(j + e) * column_step]);
        }
      }
    }
  }
};

template <class L>
void column_sums(DType dtype, const char* values, int64_t stride, int64_t n, int64_t rows,
                 int64_t row_stride, int64_t column_step, double* hi, double* lo) {
#define GELU_SUMS(T) ColumnSums<L, T>::run(values, stride, n, rows, row_stride, column_step, hi, lo)
  switch (dtype) {
    case DType::kFloat32: return GELU_SUMS(float);
    case DType::kFloat64: return GELU_SUMS(double);
    case DType::kFloat16: return GELU_SUMS(Float16);
    case DType::kBFloat16: return GELU_SUMS(BFloat16);
  }
#undef GELU_SUMS
}

template <class L, Approximate A, class T>
void run_typed(Pass pass, char** data, const int64_t* strides, int64_t size0, int64_t size1) {
  switch (pass) {
#define GELU_PASS_CASE(P) \
  case P: return Kernel<L, P, A, T>::block(data, strides, size0, size1);
    GELU_FOR_EACH_PASS(GELU_PASS_CASE)
#undef GELU_PASS_CASE
  }
}

template <class L, Approximate A>
void run_variant(Pass pass, DType dtype, char** data, const int64_t* strides, int64_t size0,
                 int64_t size1) {
  switch (dtype) {
    case DType::kFloat32: return run_typed<L, A, float>(pass, data, strides, size0, size1);
    case DType::kFloat64: return run_typed<L, A, double>(pass, data, strides, size0, size1);
    case DType::kFloat16: return run_typed<L, A, Float16>(pass, data, strides, size0, size1);
    case DType::kBFloat16: return run_typed<L, A, BFloat16>(pass, data, strides, size0, size1);
  }
}

template <class L>
void run(Pass pass, Approximate approximate, DType dtype, char** data, const int64_t* strides,
         int64_t size0, int64_t size1) {
  switch (approximate) {
    case Approximate::kNone:
      return run_variant<L, Approximate::kNone>(pass, dtype, data, strides, size0, size1);
    case Approximate::kTanh:
      return run_variant<L, Approximate::kTanh>(pass, dtype, data, strides, size0, size1);
    case Approximate::kSigmoid:
      return run_variant<L, Approximate::kSigmoid>(pass, dtype, data, strides, size0, size1);
  }
}

}  // namespace GELU_ISA
}  // namespace cpu
}  // namespace gelu_ext
