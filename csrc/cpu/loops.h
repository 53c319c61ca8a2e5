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
#include "lanes.h"
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

// f and f' with their error bounds for every 16-bit input of type T: the double path's values
// rounded to float, which lie within 0.502 units in their last place of the exact ones at every
// float32 input (docs/accuracy.md), so within math::kTableRelativeError of themselves, 2^-23 (a
// quarter of the narrow path's bound, so that a quarter as many products go to the double path).
// Built on first use (L's double lanes), shared by the passes that look them up. Each value sits
// beside its bound, so that a lookup reads one cache line.
template <class L, Approximate A, class T>
struct NarrowTables {
  const math::Bounded<float>* f = nullptr;
  const math::Bounded<float>* d1 = nullptr;

  static NarrowTables get() {
    static math::Bounded<float> f_table[kInputs16], d1_table[kInputs16];
    static const bool built = [] {
      const T* x = reinterpret_cast<const T*>(every_input16());
      float f[L::kWidth], d1[L::kWidth];
      for (int64_t i = 0; i < kInputs16; i += L::kWidth) {
        const auto terms = math::f32_via_f64<A, math::kNeedF | math::kNeedD1>(L::load(x + i));
        L::store(f, terms.f);
        L::store(d1, terms.d1);
        for (int j = 0; j < L::kWidth; ++j) {
          f_table[i + j] = math::rounded_to_float_bounded(f[j]);
          d1_table[i + j] = math::rounded_to_float_bounded(d1[j]);
        }
      }
      return true;
    }();
    (void)built;
    return NarrowTables{f_table, d1_table};
  }
};

// The cubics of f (kD1 false) or f' in every cell, negative cells after the positive ones:
// built on first use (math::fit_cubic_row).
template <Approximate A, bool kD1>
struct CubicTable {
  static const math::CubicRow* get() {
    static math::CubicRow rows[2 * math::kCellsPerSign];
    static const bool built = [] {
      for (uint32_t row = 0; row < 2 * uint32_t(math::kCellsPerSign); ++row)
        rows[row] = math::fit_cubic_row<A, kD1>(row);
      return true;
    }();
    (void)built;
    return rows;
  }
};

// The lanes' comparison results: a vector mask, or bool.
template <class N>
using LaneMask = decltype(std::declval<typename N::F>() < std::declval<typename N::F>());

// Two vectors of 16-bit data loaded, and their rounding tests' results stored, together: by the
// lanes' own load_two and round_interval_two where they have them (AVX2 bfloat16: one 32-byte
// load and one store, in an order of elements that the store undoes), else a vector at a time.
// Bit j of the failures is element j's.
template <class N, class T, class = void>
struct TwoVectors {
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
      failed |= N::round_interval(As<T>(), low[h], high[h], qualified[h], rounded)
                << (h * N::kWidth);
      N::store(out + h * N::kWidth, rounded);
    }
    return failed;
  }
};
template <class N, class T>
struct TwoVectors<N, T,
                  std::void_t<decltype(N::load_two(std::declval<const T*>(),
                                                   std::declval<typename N::F&>(),
                                                   std::declval<typename N::F&>()))>> {
  using F = typename N::F;
  using MaskF = LaneMask<N>;
  __attribute__((always_inline)) static void load(const T* p, F& first, F& second) {
    N::load_two(p, first, second);
  }
  __attribute__((always_inline)) static uint32_t round_interval_and_store(
      T* out, const F (&low)[2], const F (&high)[2], const MaskF (&qualified)[2]) {
    return N::round_interval_two(out, low, high, qualified);
  }
};

template <class T>
constexpr DType dtype_of() {
  return std::is_same<T, float>::value    ? DType::kFloat32
         : std::is_same<T, double>::value ? DType::kFloat64
         : std::is_same<T, Float16>::value ? DType::kFloat16
                                           : DType::kBFloat16;
}

template <class L, Pass P, Approximate A, class T>
struct Kernel {
  static constexpr NumericPath kPath = route(Device::kCpu, dtype_of<T>(), P, A, kIsa);
  // The path that computes every element it is given (the route's, or its fallback), in the
  // double lanes L, and, for the paths that leave some elements to it, their own math in lanes
  // N: float lanes (L::Narrow) for the 16-bit paths, the double lanes themselves for f64_pair.
  using Full = math::PathPass<fallback(kPath), P, A, is_16_bit(dtype_of<T>())>;
  static constexpr bool kBounded = fallback(kPath) != kPath;
  static constexpr bool kPair = kPath == NumericPath::kF64Pair;
  using N = typename std::conditional<kPair || !kBounded, L, typename L::Narrow>::type;
  using Bounded = math::PathPass<kPair ? kPath : NumericPath::kNarrow16, P, A>;
  static constexpr PassRule kRule = pass_rule(P);
  static constexpr int kIn = kRule.inputs, kOut = kRule.outputs, kOperands = kIn + kOut;
  // Elements per step: float lanes for the 16-bit paths, double lanes otherwise.
  static constexpr int kWidth = N::kWidth;

  // Elements whose bounded result failed its rounding test (or that lie outside the pair
  // path's domain), queued and redone by the full path L::kWidth at a time once the queue fills.
  // The lanes write the indices of a vector's failed lanes with one permute or compress.
  struct Redo {
    static constexpr int kCapacity = 256;
    // The most entries the queue holds before it is flushed (count exceeds kCapacity by less
    // than one vector's worth), and the room append_lanes needs: it may write up to 16 entries
    // (the widest lanes) past the count it adds.
    static constexpr int kRoom = kCapacity + 16;
    int32_t index[kRoom];
    int count = 0;

    // lanes: of the vector at i, or of two (a two-vector step), a vector's worth at a time.
    __attribute__((always_inline)) void add(char* const* p, int64_t i, uint32_t lanes) {
      constexpr uint32_t kVector = uint32_t((uint64_t(1) << N::kWidth) - 1);
      for (; lanes != 0; lanes >>= N::kWidth, i += N::kWidth) {
        count += N::append_lanes(index + count, static_cast<int32_t>(i), lanes & kVector);
        if (__builtin_expect(count > kCapacity, 0)) flush(p);
      }
    }
    // The queue gathered whole, computed, then scattered: a vector's worth gathered just before
    // its load would make the load wait on the narrow stores it spans (they cannot be forwarded
    // to it), which on Zen 3 nearly doubled the redo's cost (docs/performance.md).
    void flush(char* const* p) {
      if (count == 0) return;
      T buffer[kOperands][kRoom + L::kWidth];
      char* b[kOperands];
      for (int k = 0; k < kOperands; ++k) b[k] = reinterpret_cast<char*>(buffer[k]);
      for (int k = kOut; k < kOperands; ++k) {
        for (int e = 0; e < count; ++e)
          std::memcpy(&buffer[k][e], p[k] + index[e] * int64_t(sizeof(T)), sizeof(T));
        // The last vector's lanes past the queue repeat its first element.
        for (int e = count; e < count + L::kWidth; ++e) buffer[k][e] = buffer[k][0];
      }
      for (int first = 0; first < count; first += L::kWidth) vector(b, first);
      for (int k = 0; k < kOut; ++k)
        for (int e = 0; e < count; ++e)
          std::memcpy(p[k] + index[e] * int64_t(sizeof(T)), &buffer[k][e], sizeof(T));
      count = 0;
    }
  };

  // A bounded path (narrow16, f64_pair): every lane is stored, and those whose rounding test
  // fails (f64_pair: whose error is not 0) are redone by the full path.
  __attribute__((always_inline)) static void bounded_step(char* const* p, int64_t i, Redo& redo) {
    typename N::F in[kIn];
    math::Bounded<typename N::F> out[kOut];
    for (int k = 0; k < kIn; ++k) in[k] = N::load(reinterpret_cast<const T*>(p[kOut + k]) + i);
    Bounded::apply(in, out);
    store_or_redo(p, i, out, redo);
  }

  __attribute__((always_inline)) static void store_or_redo(char* const* p, int64_t i,
                                                           const math::Bounded<typename N::F>* out,
                                                           Redo& redo) {
    uint32_t failed = 0;
    for (int k = 0; k < kOut; ++k) {
      if constexpr (kPair) {
        N::store(reinterpret_cast<T*>(p[k]) + i, N::round(As<T>(), out[k].value));
        // The pair path's error is 0 or not: no interval to round.
        failed |= N::may_round_apart(As<T>(), out[k].error, typename N::F(0.0f));
      } else {
        // The interval's upper end rounded as the lanes round a sure interval (for bfloat16 a
        // shift-add, not to-nearest-even's six operations), its NaN lanes redone.
        const typename N::F high = out[k].value + out[k].error;
        typename N::Bits rounded;
        failed |= N::round_interval(As<T>(), out[k].value - out[k].error, high, high == high,
                                    rounded);
        N::store(reinterpret_cast<T*>(p[k]) + i, rounded);
      }
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

  // narrow16_cubic: f or f' at x + b from the cells' cubics (CubicTable), with the narrow path's
  // rounding test and redo; offsets: the cells' (N::cell_offsets of x + b).
  __attribute__((always_inline)) static auto interpolate(const typename N::F (&in)[kIn],
                                                        const math::CubicRow* rows,
                                                        const int32_t* offsets) {
    typename N::F c[4], d;
    const typename N::F sum = math::argument_of<P>(in);
    const auto in_cell = N::cell_at(rows, sum, offsets, c, d);
    return math::narrow_cubic_interval<P>(in, c, d, sum, in_cell);
  }

  __attribute__((always_inline)) static void interpolate_step(char* const* p, int64_t i,
                                                              Redo& redo,
                                                              const math::CubicRow* rows) {
    typename N::F in[kIn];
    for (int k = 0; k < kIn; ++k) in[k] = N::load(reinterpret_cast<const T*>(p[kOut + k]) + i);
    alignas(32) int32_t offsets[kWidth];
    N::cell_offsets(math::argument_of<P>(in), offsets);
    asm("" : "+m"(offsets));  // stored, to be loaded one per lane
    const auto result = interpolate(in, rows, offsets);
    typename N::Bits rounded;
    const uint32_t failed =
        N::round_interval(As<T>(), result.low, result.high, result.qualified, rounded);
    N::store(reinterpret_cast<T*>(p[0]) + i, rounded);
    redo_failed(p, i, redo, failed);
  }

  // The cells' row offsets of the two vectors at i (N::cell_offsets), into offsets[0, 2 kWidth).
  __attribute__((always_inline)) static void cell_offsets_two(char* const* p, int64_t i,
                                                              int32_t* offsets) {
    using Two = TwoVectors<N, T>;
    typename N::F in[2][kIn];
    for (int k = 0; k < kIn; ++k)
      Two::load(reinterpret_cast<const T*>(p[kOut + k]) + i, in[0][k], in[1][k]);
    N::cell_offsets(math::argument_of<P>(in[0]), offsets);
    N::cell_offsets(math::argument_of<P>(in[1]), offsets + N::kWidth);
  }

  // Two vectors at once, through the lanes' paired loads and stores (TwoVectors, above), their
  // cells' offsets computed a step before (cell_offsets_two).
  __attribute__((always_inline)) static void interpolate_two(char* const* p, int64_t i,
                                                             Redo& redo,
                                                             const math::CubicRow* rows,
                                                             const int32_t* offsets) {
    using Two = TwoVectors<N, T>;
    typename N::F in[2][kIn];
    for (int k = 0; k < kIn; ++k)
      Two::load(reinterpret_cast<const T*>(p[kOut + k]) + i, in[0][k], in[1][k]);
    const auto first = interpolate(in[0], rows, offsets),
               second = interpolate(in[1], rows, offsets + N::kWidth);
    const uint32_t failed = Two::round_interval_and_store(
        reinterpret_cast<T*>(p[0]) + i, {first.low, second.low}, {first.high, second.high},
        {first.qualified, second.qualified});
    redo_failed(p, i, redo, failed);
  }

  // narrow16_relative: the GPU's forms on float lanes, each output within one relative bound of
  // the exact value, tested on its value alone (N::relative_rounds_surely); the bias passes'
  // large sums settled without f or f' (math::settles_large_sum), untested.
  __attribute__((always_inline)) static void relative_step(char* const* p, int64_t i, Redo& redo) {
    using F = typename N::F;
    F in[kIn], out[kOut];
    for (int k = 0; k < kIn; ++k) in[k] = N::load(reinterpret_cast<const T*>(p[kOut + k]) + i);
    const auto usable = math::GpuNarrowPass<P, A, 24>::apply(in, out);
    auto settled = LaneMask<N>{};
    if constexpr (kRule.argument_is_sum) {
      const F x = in[kRule.argument] + in[kRule.argument + 1];
      F settled_value;
      settled = math::settles_large_sum<P, A>(in, x, N::is_boundary(As<T>(), x), settled_value);
      out[0] = select(settled, settled_value, out[0]);
    }
    uint32_t failed = 0;
    for (int k = 0; k < kOut; ++k) {
      typename N::Bits rounded;
      const auto sure =
          (usable & N::relative_rounds_surely(As<T>(), out[k], settled, rounded)) | settled;
      failed |= static_cast<uint16_t>(~sure.m);
      N::store(reinterpret_cast<T*>(p[k]) + i, rounded);
    }
    redo_failed(p, i, redo, failed);
  }

  // 16-bit data have only 65536 inputs. narrow16_result_table looks each result up in a table of
  // all of them, which the narrow path (with its redo) computes on first use; narrow16_term_tables
  // look up f and f' with their error bounds (NarrowTables, the double path's) and go on as the
  // narrow path does. Every result is correctly rounded either way, so the bits are the same.
  static constexpr bool kResultTable = kPath == NumericPath::kNarrow16ResultTable;
  static constexpr bool kTermTables = kPath == NumericPath::kNarrow16TermTables;
  static constexpr bool kCubic = kPath == NumericPath::kNarrow16Cubic;
  static constexpr bool kRelative = kPath == NumericPath::kNarrow16Relative;

  static const uint16_t* result_table() {
    static uint16_t table[kInputs16];
    static const bool built = [] {
      char* p[2] = {reinterpret_cast<char*>(table),
                    reinterpret_cast<char*>(const_cast<uint16_t*>(every_input16()))};
      Redo redo;
      for (int64_t i = 0; i < kInputs16; i += kWidth) bounded_step(p, i, redo);
      redo.flush(p);
      return true;
    }();
    (void)built;
    return table;
  }

  // The tables a step reads (none for the computed paths), fetched once per call.
  using Table = typename std::conditional<
      kCubic, const math::CubicRow*,
      typename std::conditional<kResultTable, const uint16_t*, NarrowTables<L, A, T>>::type>::type;
  static Table table() {
    if constexpr (kCubic) return CubicTable<A, P == Pass::kBiasBackward>::get();
    else if constexpr (kResultTable) return result_table();
    else if constexpr (kTermTables) return NarrowTables<L, A, T>::get();
    else return Table{};
  }

  __attribute__((always_inline)) static void lookup_step(char* const* p, int64_t i, Redo& redo,
                                                         Table table) {
    const T* x = reinterpret_cast<const T*>(p[kOut + kRule.argument]) + i;
    if constexpr (kResultTable) {
      N::store(reinterpret_cast<T*>(p[0]) + i, N::lookup(table, x));
    } else {
      typename N::F in[kIn];
      for (int k = 0; k < kIn; ++k) in[k] = N::load(reinterpret_cast<const T*>(p[kOut + k]) + i);
      math::Bounded<typename N::F> f{}, d1{}, out[kOut];
      if constexpr ((needs(P) & math::kNeedF) != 0)
        N::lookup_bounded(table.f, x, f.value, f.error);
      if constexpr ((needs(P) & math::kNeedD1) != 0)
        N::lookup_bounded(table.d1, x, d1.value, d1.error);
      math::NarrowPass<P, A>::outputs_from_terms(in, f, d1, typename N::F(0.0f), out);
      store_or_redo(p, i, out, redo);
    }
  }

  __attribute__((always_inline)) static void step(char* const* p, int64_t i, Redo& redo,
                                                  Table table) {
    if constexpr (kResultTable || kTermTables) lookup_step(p, i, redo, table);
    else if constexpr (kCubic) interpolate_step(p, i, redo, table);
    else if constexpr (kRelative) relative_step(p, i, redo);
    else if constexpr (kBounded) bounded_step(p, i, redo);
    else vector(p, i);
  }

  __attribute__((always_inline)) static void vector(char* const* p, int64_t i) {
    typename L::V in[kIn], out[kOut];
    for (int k = 0; k < kIn; ++k) in[k] = L::load(reinterpret_cast<const T*>(p[kOut + k]) + i);
    Full::apply(in, out);
    for (int k = 0; k < kOut; ++k) L::store(reinterpret_cast<T*>(p[k]) + i, out[k]);
  }

  // Inputs are prefetched this far ahead: the loop spends long enough on each cache line that
  // the hardware prefetchers of some machines (virtual ones especially) fall behind.
  static constexpr int64_t kPrefetchBytes = 4096;

  __attribute__((always_inline)) static void prefetch_inputs(char* const* p, int64_t i) {
    for (int k = kOut; k < kOperands; ++k)
      for (int64_t line = 0; line < 2 * kWidth * int64_t(sizeof(T)); line += 64)
        __builtin_prefetch(p[k] + i * sizeof(T) + kPrefetchBytes + line, 0, 3);
  }

  // narrow16_cubic's steps of two vectors over n elements; returns the elements done. Each step
  // computes the next one's cell offsets, so that its own row loads need not wait for its
  // offsets' stores: the chain from the inputs to the rounding test is long enough that the core
  // overlaps too few steps (16-bit bias passes 1.08-1.16 times faster on Zen 3,
  // bench/kernel_alone.cpp; docs/performance.md).
  static int64_t interpolate_pairs(char* const* __restrict p, int64_t n, Redo& redo,
                                   const math::CubicRow* rows) {
    alignas(32) int32_t offsets[2][2 * kWidth];
    int32_t *current = offsets[0], *next = offsets[1];
    if (n >= 2 * kWidth) cell_offsets_two(p, 0, current);
    int64_t i = 0;
    for (; i + 2 * kWidth <= n; i += 2 * kWidth) {
      prefetch_inputs(p, i);
      if (i + 4 * kWidth <= n) cell_offsets_two(p, i + 2 * kWidth, next);
      asm("" : "+m"(offsets));  // stored, to be loaded one per lane
      interpolate_two(p, i, redo, rows, current);
      std::swap(current, next);
    }
    return i;
  }

  // n elements of each operand, contiguous. Two vectors per step give the core two independent
  // dependency chains to interleave.
  // p is __restrict: the stores through the data pointers never write the array of pointers
  // itself, which the compiler would otherwise reload after every store (4 loads per loop step).
  static void contiguous(char* const* __restrict p, int64_t n) {
    Redo redo;
    const Table lookups = table();
    int64_t i = 0;
    if constexpr (kCubic) {
      i = interpolate_pairs(p, n, redo, lookups);
    } else {
      for (; i + 2 * kWidth <= n; i += 2 * kWidth) {
        if constexpr (!kResultTable && !kTermTables) prefetch_inputs(p, i);
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
  static_assert(check_lanes<L>(), "the lanes lack an operation of cpu/lanes.h");
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
