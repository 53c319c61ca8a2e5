// How an elementwise iteration reaches the kernels of gelu_cuda.cu: the contiguous kernel where
// every operand is dense and 16-byte aligned, with a 32-bit index where the element count allows;
// otherwise pieces small enough for 32-bit byte offsets, each given to launch_strided (which picks
// the rows or the strided kernel). No torch here: cuda/ops_cuda.cpp fills an Iteration from its
// TensorIterator, and tests/test_cuda_emulated.py runs these same decisions on the CPU, with a
// smaller index limit so that the splits and the 64-bit index happen on small tensors.
#pragma once

#include <cstdint>

#include "../math/passes.h"
#include "gelu_cuda.h"

namespace gelu_ext {
namespace cuda {

constexpr int64_t kMax32BitIndex = INT32_MAX;

// An iteration as TensorIterator gives it after coalescing its dimensions: dimension 0 fastest,
// per-operand byte strides, operands outputs first.
struct Iteration {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};
  char* data[kMaxOperands] = {};
};

inline int element_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kFloat64: return 8;
    default: return 2;
  }
}

inline int64_t numel(const Iteration& it) {
  int64_t n = 1;
  for (int d = 0; d < it.ndim; ++d) n *= it.sizes[d];
  return n;
}

// TensorIterator::is_contiguous: one element, or one dimension along which every operand is
// dense.
inline bool is_contiguous(const Iteration& it, int operands, int64_t element_bytes) {
  if (numel(it) == 1) return true;
  if (it.ndim != 1) return false;
  for (int k = 0; k < operands; ++k)
    if (it.strides[k][0] != element_bytes) return false;
  return true;
}

inline bool all_aligned(const Iteration& it, int operands, uintptr_t bytes) {
  for (int k = 0; k < operands; ++k)
    if (reinterpret_cast<uintptr_t>(it.data[k]) % bytes != 0) return false;
  return true;
}

inline IndexWidth index_width(int64_t n, int64_t limit) {
  return n <= limit ? IndexWidth::k32 : IndexWidth::k64;
}

// Whether the element count and every operand's largest byte offset (plus one) are at most
// `limit` (TensorIterator::can_use_32bit_indexing with limit INT32_MAX).
inline bool fits_index(const Iteration& it, int operands, int64_t limit) {
  if (numel(it) > limit) return false;
  for (int k = 0; k < operands; ++k) {
    int64_t end = 1;
    for (int d = 0; d < it.ndim; ++d) end += (it.sizes[d] - 1) * it.strides[k][d];
    if (end > limit) return false;
  }
  return true;
}

// The dimension to halve: of those longer than one element, the one along which some operand
// spans the most bytes (TensorIterator::get_dim_to_split).
inline int dimension_to_split(const Iteration& it, int operands) {
  int best = -1;
  int64_t best_extent = -1;
  for (int d = it.ndim - 1; d >= 0; --d) {
    if (it.sizes[d] < 2) continue;
    for (int k = 0; k < operands; ++k) {
      const int64_t extent = (it.sizes[d] - 1) * it.strides[k][d];
      if (extent > best_extent) {
        best_extent = extent;
        best = d;
      }
    }
  }
  return best;
}

// Calls launch(piece) for pieces of `it` that each fit `limit`, halving the widest dimension
// until they do; stops at the first error.
template <class Launch>
cudaError_t for_each_piece(const Iteration& it, int operands, int64_t limit, Launch&& launch) {
  if (fits_index(it, operands, limit)) return launch(it);
  const int d = dimension_to_split(it, operands);
  Iteration first = it, second = it;
  first.sizes[d] = it.sizes[d] / 2;
  second.sizes[d] = it.sizes[d] - first.sizes[d];
  for (int k = 0; k < operands; ++k) second.data[k] += first.sizes[d] * it.strides[k][d];
  const cudaError_t status = for_each_piece(first, operands, limit, launch);
  return status != cudaSuccess ? status : for_each_piece(second, operands, limit, launch);
}

// A piece that fits 32-bit offsets, as the kernels take it. A dimension of one element has no
// stride that matters: 0, whatever the tensor's (it may not fit in 32 bits).
inline StridedLayout strided_layout(const Iteration& piece, int operands) {
  StridedLayout layout{};
  layout.ndim = piece.ndim;
  for (int d = 0; d < piece.ndim; ++d) {
    layout.sizes[d] = static_cast<int32_t>(piece.sizes[d]);
    for (int k = 0; k < operands; ++k)
      layout.strides[k][d] = piece.sizes[d] == 1 ? 0 : static_cast<int32_t>(piece.strides[k][d]);
  }
  return layout;
}

// Launches pass P over `it` on `stream`. index_limit is the largest index and byte offset the
// 32-bit kernels may see: kMax32BitIndex, or less to exercise the splits in tests.
template <Pass P>
cudaError_t launch_pass(Approximate approximate, DType dtype, const Iteration& it,
                        cudaStream_t stream, int64_t index_limit) {
  constexpr int kOperands = num_operands(P);
  const int64_t n = numel(it);
  if (n == 0) return cudaSuccess;
  if (index_limit < 1 || index_limit > kMax32BitIndex) return cudaErrorInvalidValue;
  if (is_contiguous(it, kOperands, element_size(dtype)) && all_aligned(it, kOperands, 16)) {
    return launch_contiguous(P, approximate, dtype, it.data, n, index_width(n, index_limit),
                             stream);
  }
  return for_each_piece(it, kOperands, index_limit, [&](const Iteration& piece) {
    return launch_strided(P, approximate, dtype, piece.data, strided_layout(piece, kOperands),
                          stream);
  });
}

// The same for a run-time pass. The operand count is a compile-time constant in each case: GCC
// 13.3 at -O3 (Ubuntu 24.04's compiler) miscompiled num_operands(pass) of a run-time pass as a
// loop bound, copying no operand pointer for Pass::kForward.
inline cudaError_t launch_iteration(Pass pass, Approximate approximate, DType dtype,
                                    const Iteration& it, cudaStream_t stream,
                                    int64_t index_limit = kMax32BitIndex) {
  switch (pass) {
#define GELU_PASS_CASE(P) \
  case P: return launch_pass<P>(approximate, dtype, it, stream, index_limit);
    GELU_FOR_EACH_PASS(GELU_PASS_CASE)
#undef GELU_PASS_CASE
  }
  return cudaErrorInvalidValue;
}

}  // namespace cuda
}  // namespace gelu_ext
