// CUDA launchers: raw pointers, sizes, strides and a stream. No torch headers, so that the .cu
// files compile in seconds; cuda/ops_cuda.cpp turns tensors into these arguments.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "../kernels.h"

namespace gelu_ext {
namespace cuda {

constexpr int kMaxDims = 25;  // at::TensorIterator's limit

// A TensorIterator's shape (dimension 0 fastest) and per-operand byte strides. The caller
// splits iterations so that every byte offset fits in 32 bits.
struct StridedLayout {
  int32_t ndim;
  int32_t sizes[kMaxDims];
  int32_t strides[kMaxOperands][kMaxDims];
};

// The index type of the contiguous kernel: 32 bits wherever n fits (cheaper address arithmetic),
// else 64. cuda/launch_plan.h chooses.
enum class IndexWidth : int32_t { k32, k64 };

// Operands are num_operands(pass) pointers, outputs first. Each returns the launch status.
// All operands contiguous and 16-byte aligned, n elements each (k32: n at most INT32_MAX):
cudaError_t launch_contiguous(Pass pass, Approximate approximate, DType dtype, char* const* data,
                              int64_t n, IndexWidth index_width, cudaStream_t stream);
// Any layout:
cudaError_t launch_strided(Pass pass, Approximate approximate, DType dtype, char* const* data,
                           const StridedLayout& layout, cudaStream_t stream);

}  // namespace cuda
}  // namespace gelu_ext
