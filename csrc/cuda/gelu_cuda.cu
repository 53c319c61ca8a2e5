// CUDA kernels and launchers. Each element runs the math of its numeric path (gelu_math.h,
// math/route.h); this file only moves data: 16-byte vector loads and stores on contiguous aligned
// operands and on rows of them (the fused ops' broadcast bias and halves), a strided path for the
// rest. The narrow path's kernels defer their unsure elements to a queue per warp in shared
// memory (DeferredVectors); tests/test_cuda_emulated.py runs the kernels on the CPU, each warp's
// lanes in step at the warp's collective operations.

// The device forms of the math in nvcc's host pass too, where the kernels' templates are parsed
// (but never run): they name the GPU's narrow forms, which exist only under this macro.
#ifndef GELU_DEVICE_FORMS
#define GELU_DEVICE_FORMS 1
#endif
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "../gelu_math.h"
#include "gelu_cuda.h"

namespace gelu_ext {
namespace cuda {
namespace {

// Storage type of each DType and its conversions to and from the compute type.
template <DType D>
struct Storage;
template <>
struct Storage<DType::kFloat32> {
  using T = float;
  __device__ static double load(T v) { return v; }
  __device__ static T store(double v) { return static_cast<float>(v); }
};
template <>
struct Storage<DType::kFloat64> {
  using T = double;
  __device__ static double load(T v) { return v; }
  __device__ static T store(double v) { return v; }
};
// 16-bit results of the double path are rounded once from the double: one instruction for
// float16, and from compute capability 9.0 for bfloat16 (before, CUDA rounds to odd in float
// first, as math::round_to_odd_float does: the same result).
template <>
struct Storage<DType::kFloat16> {
  using T = __half;
  __device__ static double load(T v) { return __half2float(v); }
  __device__ static T store(double v) { return __double2half(v); }
};
template <>
struct Storage<DType::kBFloat16> {
  using T = __nv_bfloat16;
  __device__ static double load(T v) { return __bfloat162float(v); }
  __device__ static T store(double v) { return __double2bfloat16(v); }
};

struct Operands {
  char* ptr[kMaxOperands];
};

// Threads per block of every launch. The kernels declare no __launch_bounds__: told the block size,
// ptxas aims at a register count for a number of resident blocks and spills a register or two
// to local memory to reach it (the float64 kernels did, on every architecture); without it, they
// take the registers they need, at the same occupancy for nearly all.
constexpr int kBlockSize = 256;

template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

__device__ __forceinline__ __half round_to(__half, float v) { return __float2half_rn(v); }
__device__ __forceinline__ __nv_bfloat16 round_to(__nv_bfloat16, float v) {
  return __float2bfloat16_rn(v);
}
// Bits of a 16-bit value, to compare two roundings.
__device__ __forceinline__ unsigned short bits_of(__half h) { return __half_as_ushort(h); }
__device__ __forceinline__ unsigned short bits_of(__nv_bfloat16 h) {
  return __bfloat16_as_ushort(h);
}

// The numeric path of each element (math/route.h), for the architecture being compiled.
#if defined(__CUDA_ARCH__)
constexpr int kArch = __CUDA_ARCH__;
#elif defined(GELU_EMULATED_CUDA_ARCH)  // tests/test_cuda_emulated.py: an architecture's routes
constexpr int kArch = GELU_EMULATED_CUDA_ARCH;
#else
constexpr int kArch = 0;  // the host pass; device code is compiled for each architecture
#endif
template <Pass P, Approximate A, DType D>
constexpr NumericPath kPath = route(Device::kCuda, D, P, A, kArch);

template <class T>
__device__ __forceinline__ bool rounds_surely(float v) {
  return math::gpu_rounds_surely<std::is_same<T, __nv_bfloat16>::value>(v);
}

// The significant bits of the narrow path's argument: a 16-bit input, or a bias sum in float.
template <Pass P, DType D>
constexpr int kArgumentBits = pass_rule(P).argument_is_sum ? 24
                              : D == DType::kBFloat16  ? 8
                                                       : 11;

// Element e of a 16-bit operand's values as a float. bfloat16 pairs share a 32-bit word, and its
// high half is a float once the low half is masked off: one instruction for either half.
template <int N>
__device__ __forceinline__ float narrow_input(const __nv_bfloat16 (&values)[N], int e) {
  if constexpr (N % 2 == 0) {
    uint32_t word;
    memcpy(&word, &values[e & ~1], sizeof word);
    return math::bit_cast<float>((e & 1) != 0 ? word & 0xFFFF0000u : word << 16);
  } else {
    return __bfloat162float(values[e]);
  }
}
template <int N>
__device__ __forceinline__ float narrow_input(const __half (&values)[N], int e) {
  return __half2float(values[e]);
}

// The narrow path: stores the rounded results and returns whether they are surely the correctly
// rounded ones (the caller takes the fallback path where not).
template <Pass P, Approximate A, DType D, int N>
__device__ __forceinline__ bool apply_narrow(const typename Storage<D>::T (*in)[N],
                                             typename Storage<D>::T (*out)[N], int e) {
  constexpr PassRule kRule = pass_rule(P);
  using T = typename Storage<D>::T;
  float a[kRule.inputs], v[kRule.outputs];
#pragma unroll
  for (int k = 0; k < kRule.inputs; ++k) a[k] = narrow_input(in[k], e);
  // No core-domain check where the test below settles what lies beyond (kBeyondCoreSettles).
  bool sure = math::GpuNarrowPass<P, A, kArgumentBits<P, D>>::template apply<false>(a, v);
#pragma unroll
  for (int k = 0; k < kRule.outputs; ++k) {
    out[k][e] = round_to(T(), v[k]);
    sure &= rounds_surely<T>(v[k]);
  }
  return sure;
}

// The same for elements e and e + 1 at once, in GpuPair lanes: from compute capability 10.0,
// whose packed arithmetic does both elements' sums, products and multiply-adds in one instruction
// each (elsewhere the pairs cost instructions), and in the host's emulation, so that the tests run
// this code too (the same bits as one element at a time). Returns whether each element's results
// are sure.
constexpr bool kPackedLanes = kArch == 0 || kArch >= 1000;
template <Pass P, Approximate A, DType D, int N>
__device__ __forceinline__ math::GpuPairMask apply_narrow_pair(
    const typename Storage<D>::T (*in)[N], typename Storage<D>::T (*out)[N], int e) {
  constexpr PassRule kRule = pass_rule(P);
  using T = typename Storage<D>::T;
  math::GpuPair a[kRule.inputs], v[kRule.outputs];
#pragma unroll
  for (int k = 0; k < kRule.inputs; ++k)
    a[k] = math::GpuPair(narrow_input(in[k], e), narrow_input(in[k], e + 1));
  const math::GpuPairMask usable =  // as apply_narrow's, without a needless core check
      math::GpuNarrowPass<P, A, kArgumentBits<P, D>>::template apply<false>(a, v);
  math::GpuPairMask sure = usable;
#pragma unroll
  for (int k = 0; k < kRule.outputs; ++k) {
    out[k][e] = round_to(T(), v[k].a);
    out[k][e + 1] = round_to(T(), v[k].b);
    sure.a &= rounds_surely<T>(v[k].a);
    sure.b &= rounds_surely<T>(v[k].b);
  }
  return sure;
}

// The float path for a 16-bit element where route.h's float_path_first says so: stores the
// rounded results and returns whether they are surely the correctly rounded ones (f32_via_f32's
// float32 f lies within 0.6 of its units in the last place of f; the caller takes the double
// path where not).
template <Pass P, Approximate A, DType D, int N>
__device__ __forceinline__ bool apply_float_path(const typename Storage<D>::T (*in)[N],
                                                 typename Storage<D>::T (*out)[N], int e) {
  constexpr PassRule kRule = pass_rule(P);
  using T = typename Storage<D>::T;
  float a[kRule.inputs], b[kRule.outputs];
#pragma unroll
  for (int k = 0; k < kRule.inputs; ++k) a[k] = narrow_input(in[k], e);
  math::PathPass<NumericPath::kF32ViaF32, P, A>::apply(a, b);
  bool sure = true;
#pragma unroll
  for (int k = 0; k < kRule.outputs; ++k) {
    out[k][e] = round_to(T(), b[k]);
    sure &= math::float_rounds_surely<std::is_same<T, __nv_bfloat16>::value, 1>(b[k]);
  }
  return sure;
}

// The fallback's second look at a 16-bit element the narrow path left, before the path that
// settles every element, out of line so that the loop keeps its registers (it is rare):
// - the bias passes' large positive sums, settled without f or f' (math::settles_large_sum);
// - float16 results in its subnormal range, which the narrow path's own test leaves: the narrow
//   path's values again, with the test that sees float16's subnormal grid
//   (math::gpu_rounds_surely_anywhere).
// Operands travel by value (Values), as arrays passed by pointer would go to local memory.
template <class T, int N>
struct Values {
  T v[N];
};
template <int N>
struct Retested {
  Values<float, N> values;  // to be rounded to the 16-bit type
  bool sure;
};
constexpr bool is_bias_pass(Pass pass) {
  return pass == Pass::kBiasForward || pass == Pass::kBiasBackward;
}
template <Pass P, DType D>
constexpr bool kSecondLook = is_16_bit(D) && (is_bias_pass(P) || D == DType::kFloat16);

template <Pass P, Approximate A, DType D>
__device__ __noinline__ Retested<pass_rule(P).outputs> second_look(
    Values<float, pass_rule(P).inputs> a, bool subnormal) {
  constexpr bool kBFloat16 = D == DType::kBFloat16;
  Retested<pass_rule(P).outputs> r{};
  if constexpr (is_bias_pass(P)) {
    r.sure = math::settles_large_sum<P, A, kBFloat16>(a.v, r.values.v[0]);
    if (r.sure) return r;
  }
  if (!kBFloat16 && subnormal) {
    r.sure = math::GpuNarrowPass<P, A, kArgumentBits<P, D>>::apply(a.v, r.values.v);
#pragma unroll
    for (int k = 0; k < pass_rule(P).outputs; ++k)
      r.sure &= math::gpu_rounds_surely_anywhere<false>(r.values.v[k]);
  }
  return r;
}

// Stores the second look's results and returns true where it settles the element.
template <Pass P, Approximate A, DType D, int N>
__device__ __forceinline__ bool apply_second_look(const typename Storage<D>::T (*in)[N],
                                                  typename Storage<D>::T (*out)[N], int e) {
  if constexpr (kSecondLook<P, D>) {
    using T = typename Storage<D>::T;
    constexpr PassRule kRule = pass_rule(P);
    // float16 results are retested only where one is stored as a subnormal or zero.
    bool subnormal = false;
    if constexpr (D == DType::kFloat16) {
#pragma unroll
      for (int k = 0; k < kRule.outputs; ++k)
        subnormal |= (bits_of(out[k][e]) & 0x7C00u) == 0;
      if (!is_bias_pass(P) && !subnormal) return false;
    }
    Values<float, kRule.inputs> a;
#pragma unroll
    for (int k = 0; k < kRule.inputs; ++k) a.v[k] = narrow_input(in[k], e);
    const Retested<kRule.outputs> r = second_look<P, A, D>(a, subnormal);
    if (!r.sure) return false;
#pragma unroll
    for (int k = 0; k < kRule.outputs; ++k) out[k][e] = round_to(T(), r.values.v[k]);
    return true;
  } else {
    return false;
  }
}

// The path that settles every element (the narrow path's fallback, or the only path).
template <Pass P, Approximate A, DType D, int N>
__device__ __forceinline__ void apply_settling(const typename Storage<D>::T (*in)[N],
                                               typename Storage<D>::T (*out)[N], int e) {
  constexpr NumericPath kRoute = kPath<P, A, D>;
  constexpr PassRule kRule = pass_rule(P);
  if constexpr (float_path_first(Device::kCuda, D, P, kArch)) {
    if (apply_float_path<P, A, D, N>(in, out, e)) return;
  }
  if constexpr (kRoute == NumericPath::kF32ViaF32) {  // float in, float out
    float a[kRule.inputs], b[kRule.outputs];
#pragma unroll
    for (int k = 0; k < kRule.inputs; ++k) a[k] = in[k][e];
    math::PathPass<kRoute, P, A>::apply(a, b);
#pragma unroll
    for (int k = 0; k < kRule.outputs; ++k) out[k][e] = b[k];
  } else {
    double a[kRule.inputs], b[kRule.outputs];
#pragma unroll
    for (int k = 0; k < kRule.inputs; ++k) a[k] = Storage<D>::load(in[k][e]);
    math::PathPass<fallback(kRoute), P, A, is_16_bit(D)>::apply(a, b);
#pragma unroll
    for (int k = 0; k < kRule.outputs; ++k) out[k][e] = Storage<D>::store(b[k]);
  }
}

// The 16-bit double backward's narrow path (math/narrow16.h's NarrowPass, whose f'' the GPU's
// own forms do not compute): stores the rounded results and returns whether rounding value -+
// error gives the same 16-bit value (the caller takes the fallback path where not).
template <Pass P, Approximate A, DType D, int N>
__device__ __forceinline__ bool apply_bounded(const typename Storage<D>::T (*in)[N],
                                              typename Storage<D>::T (*out)[N], int e) {
  constexpr PassRule kRule = pass_rule(P);
  using T = typename Storage<D>::T;
  float a[kRule.inputs];
  math::Bounded<float> b[kRule.outputs];
#pragma unroll
  for (int k = 0; k < kRule.inputs; ++k) a[k] = static_cast<float>(Storage<D>::load(in[k][e]));
  math::PathPass<kPath<P, A, D>, P, A>::apply(a, b);
  bool correctly_rounded = true;
#pragma unroll
  for (int k = 0; k < kRule.outputs; ++k) {
    out[k][e] = round_to(T(), b[k].value);
    correctly_rounded &= bits_of(round_to(T(), b[k].value - b[k].error)) ==
                         bits_of(round_to(T(), b[k].value + b[k].error));
  }
  return correctly_rounded;
}

// float64's double-double path (fallback of the pair path) out of line: rare, and long, so that
// the loop keeps the pair path's registers and instruction cache. Operands travel by value.
template <Pass P, Approximate A>
__device__ __noinline__ Values<double, pass_rule(P).outputs> settle_out_of_line(
    Values<double, pass_rule(P).inputs> a) {
  Values<double, pass_rule(P).outputs> b;
  math::PathPass<fallback(NumericPath::kF64Pair), P, A>::apply(a.v, b.v);
  return b;
}

// float64's pair path: stores its results, and redoes the element out of line where one does not
// hold (error not 0: inputs outside the core domain, results near zero, the subnormals or
// overflow).
template <Pass P, Approximate A, DType D, int N>
__device__ __forceinline__ void apply_pair(const typename Storage<D>::T (*in)[N],
                                           typename Storage<D>::T (*out)[N], int e) {
  constexpr PassRule kRule = pass_rule(P);
  Values<double, kRule.inputs> a;
  math::Bounded<double> b[kRule.outputs];
#pragma unroll
  for (int k = 0; k < kRule.inputs; ++k) a.v[k] = in[k][e];
  math::PathPass<NumericPath::kF64Pair, P, A>::apply(a.v, b);
  bool holds = true;
#pragma unroll
  for (int k = 0; k < kRule.outputs; ++k) {
    out[k][e] = b[k].value;
    holds &= math::bit_cast<uint64_t>(b[k].error) == 0;  // +0 or +inf: an integer compare
  }
  if (holds) return;
  const Values<double, kRule.outputs> settled = settle_out_of_line<P, A>(a);
#pragma unroll
  for (int k = 0; k < kRule.outputs; ++k) out[k][e] = settled.v[k];
}

// The GPU's narrow forms (GpuNarrowPass) serve the passes without f''; the double backward's
// narrow route takes apply_bounded.
template <Pass P, Approximate A, DType D>
constexpr bool kNarrow = kPath<P, A, D> == NumericPath::kNarrow16 && (needs(P) & math::kNeedD2) == 0;
template <Pass P, Approximate A, DType D>
constexpr bool kBounded = kPath<P, A, D> == NumericPath::kNarrow16 && !kNarrow<P, A, D>;
template <Pass P, Approximate A, DType D>
constexpr bool kPair = kPath<P, A, D> == NumericPath::kF64Pair;

// Applies pass P to element e of the operand values held in registers.
template <Pass P, Approximate A, DType D, int N>
__device__ __forceinline__ void apply_element(const typename Storage<D>::T (*in)[N],
                                              typename Storage<D>::T (*out)[N], int e) {
  if constexpr (kNarrow<P, A, D>) {
    if (apply_narrow<P, A, D, N>(in, out, e) || apply_second_look<P, A, D, N>(in, out, e)) return;
  } else if constexpr (kBounded<P, A, D>) {
    if (apply_bounded<P, A, D, N>(in, out, e)) return;
  } else if constexpr (kPair<P, A, D>) {
    apply_pair<P, A, D, N>(in, out, e);
    return;
  }
  apply_settling<P, A, D, N>(in, out, e);
}

// word | bit where condition holds, in one predicated instruction. Left to itself, ptxas makes
// each element's bit of the narrow path's unsure word with one select (sm_90) or two (sm_100)
// and adds the bits up, 1.4 and 2.4 instructions per element.
__device__ __forceinline__ void set_bit_if(uint32_t& word, bool condition, uint32_t bit) {
#if defined(__CUDA_ARCH__)
  asm("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %1, 0;\n\t@p or.b32 %0, %0, %2;\n\t}"
      : "+r"(word)
      : "r"(uint32_t(condition)), "r"(bit));
#else
  if (condition) word |= bit;
#endif
}

// One 16-byte vector of every operand: loaded from in[k], the pass applied to each element,
// stored to out[k]. On the narrow path the results stored are the narrow path's, and the elements
// it left unsure set their bits of `unsure`, element e bit first_bit + e, for the warp's deferred
// fallback (DeferredVectors); elsewhere every element is settled.
template <Pass P, Approximate A, DType D, class V>
__device__ __forceinline__ void vector_step(V* const* out, const V* const* in, uint32_t& unsure,
                                            int first_bit) {
  using T = typename Storage<D>::T;
  constexpr int kVec = sizeof(V) / sizeof(T);
  constexpr int kIn = pass_rule(P).inputs, kOut = pass_rule(P).outputs;
  T in_values[kIn][kVec], out_values[kOut][kVec];
#pragma unroll
  for (int k = 0; k < kIn; ++k) {
    const V loaded = *in[k];
#pragma unroll
    for (int e = 0; e < kVec; ++e) in_values[k][e] = loaded.v[e];
  }
  if constexpr (kNarrow<P, A, D>) {
    if constexpr (kPackedLanes) {
#pragma unroll
      for (int e = 0; e < kVec; e += 2) {
        const math::GpuPairMask sure = apply_narrow_pair<P, A, D, kVec>(in_values, out_values, e);
        set_bit_if(unsure, !sure.a, 1u << (first_bit + e));
        set_bit_if(unsure, !sure.b, 2u << (first_bit + e));
      }
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const bool sure = apply_narrow<P, A, D, kVec>(in_values, out_values, e);
        set_bit_if(unsure, !sure, 1u << (first_bit + e));
      }
    }
  } else {
#pragma unroll
    for (int e = 0; e < kVec; ++e) apply_element<P, A, D, kVec>(in_values, out_values, e);
  }
#pragma unroll
  for (int k = 0; k < kOut; ++k) {
    V stored;
#pragma unroll
    for (int e = 0; e < kVec; ++e) stored.v[e] = out_values[k][e];
    *out[k] = stored;
  }
}

// The same off the narrow path, where every element is settled.
template <Pass P, Approximate A, DType D, class V>
__device__ __forceinline__ void vector_step(V* const* out, const V* const* in) {
  uint32_t none_unsure = 0;
  vector_step<P, A, D>(out, in, none_unsure, 0);
}

// The narrow path's unsure elements, deferred per warp. Redone where met, they cost the whole warp
// the fallback at every element slot where one of its 32 lanes needed it (float16 forward on
// normal data: 6.9% of slots, each some 100 instructions). Instead each lane whose vector holds an
// unsure element queues the vector (where it lies, and which elements) in its warp's entries of
// shared memory, and once 32 or more are queued the warp redoes 32 of them together, one lane per
// vector; after its loop, the rest. The fallback recomputes an element's inputs from memory
// (outputs never alias inputs), and its result overwrites the narrow path's.
// Every lane of the warp takes part in add and redo: the kernels' loops run the same number of
// rounds on each lane of a warp.
constexpr unsigned kAllLanes = 0xFFFFFFFFu;
constexpr int kWarpSize = 32;
// Up to 31 entries wait when a round adds up to 32 more.
constexpr int kQueueEntries = 2 * kWarpSize;

// A lane's vectors of a round: the one at `where`, and on the narrow path a second one
// (kPairedVectors: kWarpSize vectors further in the contiguous kernels, a row further in the rows
// kernels); bit e of `unsure` names element e % kVec of the (e / kVec)th.
template <class Position>
struct DeferredEntry {
  Position where;
  uint32_t unsure;  // the elements to redo, as bits
};

// locate(where, vector, in, out): the kernel's own pointers of every operand to the lane's
// vector-th vector of the round at `where`; kVectors: the lane's vectors per entry
// (kPairedVectors, or 1).
template <Pass P, Approximate A, DType D, class V, int kVectors, class Position, class Locate>
struct DeferredVectors {
  using T = typename Storage<D>::T;
  static constexpr PassRule kRule = pass_rule(P);
  DeferredEntry<Position>* entries;  // this warp's kQueueEntries
  Locate locate;
  int count;  // the same on every lane

  // Queues this lane's vector if `unsure` names elements of it. A full queue is redone first, on
  // a branch of its own: inside this one, ptxas loads the redo's constants on every round that
  // queues a vector.
  __device__ __forceinline__ void add(Position where, uint32_t unsure) {
    if (count >= kWarpSize) redo();
    const unsigned queued = __ballot_sync(kAllLanes, unsure != 0);
    if (queued == 0) return;
    if (unsure != 0) {
      const unsigned lanes_below = (1u << (threadIdx.x % kWarpSize)) - 1u;
      entries[count + __popc(queued & lanes_below)] = DeferredEntry<Position>{where, unsure};
    }
    count += __popc(queued);
  }

  // Redoes the first 32 entries (or all, if fewer) and moves the rest to the front.
  __device__ __forceinline__ void redo() {
    __syncwarp();  // the entries and the narrow path's stores, seen by every lane
    const int lane = threadIdx.x % kWarpSize;
    if (lane < count) redo_entry(entries[lane]);
    if (lane + kWarpSize < count) entries[lane] = entries[lane + kWarpSize];
    __syncwarp();  // the entries moved before others are added
    count = count > kWarpSize ? count - kWarpSize : 0;
  }

  __device__ __forceinline__ void finish() {
    while (count > 0) redo();
  }

  __device__ __forceinline__ void redo_entry(const DeferredEntry<Position>& entry) {
    constexpr int kVec = sizeof(V) / sizeof(T);
    for (uint32_t unsure = entry.unsure; unsure != 0; unsure &= unsure - 1) {
      const int bit = __ffs(unsure) - 1, e = kVectors > 1 ? bit % kVec : bit;
      const V* in[kRule.inputs];
      V* out[kRule.outputs];
      locate(entry.where, kVectors > 1 ? bit / kVec : 0, in, out);
      T in_values[kRule.inputs][1], out_values[kRule.outputs][1];
#pragma unroll
      for (int k = 0; k < kRule.inputs; ++k) in_values[k][0] = in[k]->v[e];
      // The second look reads the narrow path's float16 results (their subnormal range).
      if constexpr (D == DType::kFloat16) apply_narrow<P, A, D, 1>(in_values, out_values, 0);
      if (!apply_second_look<P, A, D, 1>(in_values, out_values, 0))
        apply_settling<P, A, D, 1>(in_values, out_values, 0);
#pragma unroll
      for (int k = 0; k < kRule.outputs; ++k) out[k]->v[e] = out_values[k][0];
    }
  }
};

template <Pass P, Approximate A, DType D, class V, int kVectors, class Position, class Locate>
__device__ __forceinline__ DeferredVectors<P, A, D, V, kVectors, Position, Locate>
deferred_vectors(DeferredEntry<Position> (*entries)[kQueueEntries], Locate locate) {
  return DeferredVectors<P, A, D, V, kVectors, Position, Locate>{entries[threadIdx.x / kWarpSize],
                                                                 locate, 0};
}

// The contiguous kernels of the narrow path take two 16-byte vectors per lane and round, kWarpSize
// vectors apart (each load of the warp still 512 contiguous bytes): the round's fixed work (the
// queue's vote and bookkeeping, the loop, the addresses) then serves 16 elements, not 8, and a
// queued entry as many (bench/gpu_model.py, sm_90, fallback included: 0.8-1.2 instructions per
// 16-bit element fewer, registers 32-39 -> 39-40). The float32 kernels gained nothing so (32
// contiguous bytes per lane: sm_100 exact forward 61.2 -> 62.4 per element).
template <Pass P, Approximate A, DType D>
constexpr int kPairedVectors = kNarrow<P, A, D> ? 2 : 1;

// Contiguous operands whose addresses are 16-byte aligned: each thread moves 16 bytes per operand
// per vector (kPairedVectors per round), in a grid-stride loop; the last n % kVec elements are
// done one per thread. On the narrow path every lane of a warp runs as many rounds as its first
// lane (DeferredVectors).
template <Pass P, Approximate A, DType D, class index_t>
__global__ void contiguous_kernel(Operands ops, index_t n) {
  using T = typename Storage<D>::T;
  constexpr int kVec = 16 / sizeof(T);
  constexpr int kOut = pass_rule(P).outputs, kIn = pass_rule(P).inputs;
  using V = Vec<T, kVec>;
  const index_t num_vecs = n / kVec;
  const index_t step = static_cast<index_t>(gridDim.x) * kBlockSize;
  const index_t first = static_cast<index_t>(blockIdx.x) * kBlockSize + threadIdx.x;
  const auto pointers = [&](index_t v, const V** in, V** out) {
#pragma unroll
    for (int k = 0; k < kIn; ++k) in[k] = reinterpret_cast<const V*>(ops.ptr[kOut + k]) + v;
#pragma unroll
    for (int k = 0; k < kOut; ++k) out[k] = reinterpret_cast<V*>(ops.ptr[k]) + v;
  };
  if constexpr (kNarrow<P, A, D>) {
    __shared__ DeferredEntry<index_t> entries[kBlockSize / kWarpSize][kQueueEntries];
    constexpr int kPairs = kPairedVectors<P, A, D>;
    const auto locate = [&](index_t where, int vector, const V** in, V** out) {
      pointers(where + vector * kWarpSize, in, out);
    };
    auto deferred = deferred_vectors<P, A, D, V, kPairs, index_t>(entries, locate);
    const index_t lane = threadIdx.x % kWarpSize;
    for (index_t warp_first = (first - lane) * kPairs; warp_first < num_vecs;
         warp_first += kPairs * step) {
      const index_t v = warp_first + lane;
      uint32_t unsure = 0;
#pragma unroll
      for (int pair = 0; pair < kPairs; ++pair) {
        if (v + pair * kWarpSize < num_vecs) {
          const V* in[kIn];
          V* out[kOut];
          pointers(v + pair * kWarpSize, in, out);
          vector_step<P, A, D>(out, in, unsure, pair * kVec);
        }
      }
      deferred.add(v, unsure);
    }
    deferred.finish();
  } else {
    for (index_t v = first; v < num_vecs; v += step) {
      const V* in[kIn];
      V* out[kOut];
      pointers(v, in, out);
      vector_step<P, A, D>(out, in);
    }
  }
  const index_t i = num_vecs * kVec + first;
  if (i < n) {
    T in[kIn][1], out[kOut][1];
#pragma unroll
    for (int k = 0; k < kIn; ++k) in[k][0] = reinterpret_cast<const T*>(ops.ptr[kOut + k])[i];
    apply_element<P, A, D, 1>(in, out, 0);
#pragma unroll
    for (int k = 0; k < kOut; ++k) reinterpret_cast<T*>(ops.ptr[k])[i] = out[k][0];
  }
}

// Rows of 16-byte vectors: every operand contiguous along a row of vecs_per_row vectors, with
// its own byte stride between rows (0 for a broadcast bias; twice the row for geglu's halves of
// one tensor), every row start 16-byte aligned. A thread divides once to find its first vector's
// row and column, then steps both (a division per vector would cost 20-odd instructions). On the
// narrow path a lane takes one column's vectors in kPairedVectors rows, row and row + 1, as the
// contiguous kernels take two vectors (each load of the warp still contiguous along a row).
struct RowStrides {
  int32_t bytes[kMaxOperands];
};
struct RowColumn {
  int32_t row, column;
};

// The lanes' work of a rows kernel, one column's vectors in kRows rows each: its loop's bound, and
// the grid's size.
template <int kRows>
__host__ __device__ int64_t rows_lane_work(int32_t vecs_per_row, int32_t num_rows) {
  return static_cast<int64_t>(vecs_per_row) * ((num_rows + kRows - 1) / kRows);
}

template <Pass P, Approximate A, DType D>
__global__ void rows_kernel(Operands ops, RowStrides rows, int32_t vecs_per_row, int32_t num_rows) {
  using T = typename Storage<D>::T;
  constexpr int kVec = 16 / sizeof(T);
  constexpr int kOut = pass_rule(P).outputs, kIn = pass_rule(P).inputs;
  constexpr int kRows = kPairedVectors<P, A, D>;  // a lane's rows per round
  using V = Vec<T, kVec>;
  const int32_t step = gridDim.x * kBlockSize;
  const int32_t step_rows = step / vecs_per_row, step_columns = step - step_rows * vecs_per_row;
  const int32_t first = blockIdx.x * kBlockSize + threadIdx.x;
  // Only the row and column go round the loop; the row in steps of kRows.
  const int32_t first_rows = first / vecs_per_row;
  int32_t row = first_rows * kRows, column = first - first_rows * vecs_per_row;
  const auto pointers = [&](RowColumn at, const V** in, V** out) {
#pragma unroll
    for (int k = 0; k < kIn; ++k) {
      in[k] = reinterpret_cast<const V*>(ops.ptr[kOut + k] +
                                         static_cast<int64_t>(at.row) * rows.bytes[kOut + k]) +
              at.column;
    }
#pragma unroll
    for (int k = 0; k < kOut; ++k) {
      out[k] = reinterpret_cast<V*>(ops.ptr[k] + static_cast<int64_t>(at.row) * rows.bytes[k]) +
               at.column;
    }
  };
  const auto next_row = [&](const V** in, V** out) {  // the pointers one row on
#pragma unroll
    for (int k = 0; k < kIn; ++k) {
      in[k] = reinterpret_cast<const V*>(reinterpret_cast<const char*>(in[k]) +
                                         rows.bytes[kOut + k]);
    }
#pragma unroll
    for (int k = 0; k < kOut; ++k)
      out[k] = reinterpret_cast<V*>(reinterpret_cast<char*>(out[k]) + rows.bytes[k]);
  };
  const auto next = [&] {
    row += step_rows * kRows;
    column += step_columns;
    if (column >= vecs_per_row) {
      column -= vecs_per_row;
      row += kRows;
    }
  };
  if constexpr (kNarrow<P, A, D>) {
    __shared__ DeferredEntry<RowColumn> entries[kBlockSize / kWarpSize][kQueueEntries];
    const auto locate = [&](RowColumn where, int vector, const V** in, V** out) {
      pointers(RowColumn{where.row + vector, where.column}, in, out);
    };
    auto deferred = deferred_vectors<P, A, D, V, kRows, RowColumn>(entries, locate);
    // The warp's first lane's column of kRows rows, which decides the rounds of every lane.
    const int64_t total = rows_lane_work<kRows>(vecs_per_row, num_rows);
    for (int64_t warp_first = first - threadIdx.x % kWarpSize; warp_first < total;
         warp_first += step) {
      uint32_t unsure = 0;
      const V* in[kIn];
      V* out[kOut];
      pointers(RowColumn{row, column}, in, out);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r > 0) next_row(in, out);
        if (row + r < num_rows) vector_step<P, A, D>(out, in, unsure, r * kVec);
      }
      deferred.add(RowColumn{row, column}, unsure);
      next();
    }
    deferred.finish();
  } else {
    while (row < num_rows) {
      const V* in[kIn];
      V* out[kOut];
      pointers(RowColumn{row, column}, in, out);
      vector_step<P, A, D>(out, in);
      next();
    }
  }
}

// Any layout: each element's byte offsets come from its multi-index. The host split the work so
// that all offsets fit in 32 bits.
template <Pass P, Approximate A, DType D>
__global__ void strided_kernel(Operands ops, StridedLayout layout, int32_t n) {
  using T = typename Storage<D>::T;
  constexpr int kOut = pass_rule(P).outputs, kIn = pass_rule(P).inputs;
  const int32_t step = gridDim.x * kBlockSize;
  for (int32_t i = blockIdx.x * kBlockSize + threadIdx.x; i < n; i += step) {
    uint32_t offset[kOut + kIn] = {};
    int32_t rest = i;
    for (int d = 0; d < layout.ndim; ++d) {
      const int32_t size = layout.sizes[d];
      const int32_t idx = rest % size;
      rest /= size;
#pragma unroll
      for (int k = 0; k < kOut + kIn; ++k) offset[k] += idx * layout.strides[k][d];
    }
    T in[kIn][1], out[kOut][1];
#pragma unroll
    for (int k = 0; k < kIn; ++k)
      in[k][0] = *reinterpret_cast<const T*>(ops.ptr[kOut + k] + offset[kOut + k]);
    apply_element<P, A, D, 1>(in, out, 0);
#pragma unroll
    for (int k = 0; k < kOut; ++k) *reinterpret_cast<T*>(ops.ptr[k] + offset[k]) = out[k][0];
  }
}

// As many blocks as the GPU holds at once, so that a grid-stride loop runs in one wave: the
// kernel's registers and shared memory decide how many fit on an SM (3 to 6 of 256 threads, for
// most kernels, by their machine code). With more, the blocks left over would run as a last wave
// on part-filled SMs, with fewer warps to cover the memory's latency.
template <auto kKernel>
int grid_size(int64_t work_items) {
  static int resident[64] = {};  // per device
  int device = 0;
  cudaGetDevice(&device);
  int& blocks_at_once = resident[device & 63];
  if (blocks_at_once == 0) {
    int sms = 0, per_sm = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    // A kernel that cannot load fails its launch, which reports why; this query's error is
    // cleared so that it is not taken for the launch's.
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kKernel, kBlockSize, 0) != cudaSuccess)
      cudaGetLastError();
    blocks_at_once = (sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1);
  }
  const int64_t blocks = (work_items + kBlockSize - 1) / kBlockSize;
  return static_cast<int>(blocks < blocks_at_once ? (blocks > 0 ? blocks : 1) : blocks_at_once);
}

// The pass's operand pointers, as many as the pass has: a count known at compile time.
template <Pass P>
Operands operands_of(char* const* data) {
  Operands ops{};
  for (int k = 0; k < num_operands(P); ++k) ops.ptr[k] = data[k];
  return ops;
}

template <Pass P, Approximate A, DType D>
cudaError_t launch_contiguous_typed(char* const* data, int64_t n, IndexWidth index_width,
                                    cudaStream_t stream) {
  const Operands ops = operands_of<P>(data);
  constexpr int kVec = 16 / sizeof(typename Storage<D>::T);
  const int64_t work = n / (kVec * kPairedVectors<P, A, D>) + 1;
  if (index_width == IndexWidth::k32) {
    if (n > INT32_MAX) return cudaErrorInvalidValue;
    const int grid = grid_size<contiguous_kernel<P, A, D, int32_t>>(work);
    contiguous_kernel<P, A, D, int32_t><<<grid, kBlockSize, 0, stream>>>(ops, static_cast<int32_t>(n));
  } else {
    const int grid = grid_size<contiguous_kernel<P, A, D, int64_t>>(work);
    contiguous_kernel<P, A, D, int64_t><<<grid, kBlockSize, 0, stream>>>(ops, n);
  }
  return cudaGetLastError();
}

// Whether a layout is rows of aligned 16-byte vectors for every operand (rows_kernel): two
// dimensions, the first contiguous for every operand and a whole number of vectors long, every
// address and row stride a multiple of 16 bytes.
bool is_rows_of_vectors(const Operands& ops, const StridedLayout& layout, int operands,
                        int element_size) {
  if (layout.ndim != 2 || layout.sizes[0] % (16 / element_size) != 0) return false;
  for (int k = 0; k < operands; ++k) {
    if (layout.strides[k][0] != element_size || layout.strides[k][1] % 16 != 0 ||
        reinterpret_cast<uintptr_t>(ops.ptr[k]) % 16 != 0) {
      return false;
    }
  }
  return true;
}

template <Pass P, Approximate A, DType D>
cudaError_t launch_strided_typed(char* const* data, const StridedLayout& layout,
                                 cudaStream_t stream) {
  const Operands ops = operands_of<P>(data);
  constexpr int kSize = sizeof(typename Storage<D>::T);
  if (is_rows_of_vectors(ops, layout, num_operands(P), kSize)) {
    RowStrides rows{};
    for (int k = 0; k < num_operands(P); ++k) rows.bytes[k] = layout.strides[k][1];
    const int32_t vecs_per_row = layout.sizes[0] / (16 / kSize);
    const int64_t work = rows_lane_work<kPairedVectors<P, A, D>>(vecs_per_row, layout.sizes[1]);
    const int grid = grid_size<rows_kernel<P, A, D>>(work);
    rows_kernel<P, A, D><<<grid, kBlockSize, 0, stream>>>(ops, rows, vecs_per_row, layout.sizes[1]);
    return cudaGetLastError();
  }
  int64_t n = 1;
  for (int d = 0; d < layout.ndim; ++d) n *= layout.sizes[d];
  const int grid = grid_size<strided_kernel<P, A, D>>(n);
  strided_kernel<P, A, D><<<grid, kBlockSize, 0, stream>>>(ops, layout, static_cast<int32_t>(n));
  return cudaGetLastError();
}

// Turns the run-time (pass, approximate, dtype) into template arguments for `Launch`.
template <template <Pass, Approximate, DType> class Launch, class... Args>
cudaError_t dispatch(Pass pass, Approximate approximate, DType dtype, Args&&... args);

template <Pass P, Approximate A, template <Pass, Approximate, DType> class Launch, class... Args>
cudaError_t dispatch_dtype(DType dtype, Args&&... args) {
  switch (dtype) {
    case DType::kFloat32: return Launch<P, A, DType::kFloat32>::run(args...);
    case DType::kFloat64: return Launch<P, A, DType::kFloat64>::run(args...);
    case DType::kFloat16: return Launch<P, A, DType::kFloat16>::run(args...);
    case DType::kBFloat16: return Launch<P, A, DType::kBFloat16>::run(args...);
  }
  return cudaErrorInvalidValue;
}

template <Pass P, template <Pass, Approximate, DType> class Launch, class... Args>
cudaError_t dispatch_variant(Approximate approximate, DType dtype, Args&&... args) {
  switch (approximate) {
    case Approximate::kNone: return dispatch_dtype<P, Approximate::kNone, Launch>(dtype, args...);
    case Approximate::kTanh: return dispatch_dtype<P, Approximate::kTanh, Launch>(dtype, args...);
    case Approximate::kSigmoid:
      return dispatch_dtype<P, Approximate::kSigmoid, Launch>(dtype, args...);
  }
  return cudaErrorInvalidValue;
}

template <template <Pass, Approximate, DType> class Launch, class... Args>
cudaError_t dispatch(Pass pass, Approximate approximate, DType dtype, Args&&... args) {
  switch (pass) {
#define GELU_PASS_CASE(P) \
  case P: return dispatch_variant<P, Launch>(approximate, dtype, args...);
    GELU_FOR_EACH_PASS(GELU_PASS_CASE)
#undef GELU_PASS_CASE
  }
  return cudaErrorInvalidValue;
}

template <Pass P, Approximate A, DType D>
struct ContiguousLaunch {
  static cudaError_t run(char* const* data, int64_t n, IndexWidth index_width,
                         cudaStream_t stream) {
    return launch_contiguous_typed<P, A, D>(data, n, index_width, stream);
  }
};

template <Pass P, Approximate A, DType D>
struct StridedLaunch {
  static cudaError_t run(char* const* data, const StridedLayout& layout, cudaStream_t stream) {
    return launch_strided_typed<P, A, D>(data, layout, stream);
  }
};

}  // namespace

cudaError_t launch_contiguous(Pass pass, Approximate approximate, DType dtype, char* const* data,
                              int64_t n, IndexWidth index_width, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return dispatch<ContiguousLaunch>(pass, approximate, dtype, data, n, index_width, stream);
}

cudaError_t launch_strided(Pass pass, Approximate approximate, DType dtype, char* const* data,
                           const StridedLayout& layout, cudaStream_t stream) {
  for (int d = 0; d < layout.ndim; ++d)
    if (layout.sizes[d] == 0) return cudaSuccess;
  return dispatch<StridedLaunch>(pass, approximate, dtype, data, layout, stream);
}

}  // namespace cuda
}  // namespace gelu_ext
