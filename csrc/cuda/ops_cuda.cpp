// CUDA implementations of the gelu_ext ops: device guard, current stream, layout analysis, and a
// check after every launch. The kernels themselves are in gelu_cuda.cu, which sees no torch.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cstdint>

#include "../ops.h"
#include "gelu_cuda.h"

namespace gelu_ext {
namespace {

bool all_aligned(const at::TensorIteratorBase& iter, int64_t bytes) {
  for (int k = 0; k < iter.ntensors(); ++k)
    if (reinterpret_cast<uintptr_t>(iter.data_ptr(k)) % bytes != 0) return false;
  return true;
}

void launch_strided(const at::TensorIteratorBase& iter, Pass pass, Approximate approximate,
                    DType dtype, cudaStream_t stream) {
  TORCH_INTERNAL_ASSERT(iter.ndim() <= cuda::kMaxDims);
  cuda::StridedLayout layout{};
  layout.ndim = static_cast<int32_t>(iter.ndim());
  char* data[kMaxOperands];
  for (int k = 0; k < iter.ntensors(); ++k) {
    data[k] = static_cast<char*>(iter.data_ptr(k));
    for (int d = 0; d < iter.ndim(); ++d)
      layout.strides[k][d] = static_cast<int32_t>(iter.strides(k)[d]);
  }
  for (int d = 0; d < iter.ndim(); ++d) layout.sizes[d] = static_cast<int32_t>(iter.shape()[d]);
  C10_CUDA_CHECK(cuda::launch_strided(pass, approximate, dtype, data, layout, stream));
}

void run_cuda(at::TensorIteratorBase& iter, Pass pass, Approximate approximate) {
  if (iter.numel() == 0) return;
  const c10::cuda::CUDAGuard guard(iter.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const DType dtype = kernel_dtype(iter);
  if (iter.is_contiguous() && all_aligned(iter, 16)) {
    char* data[kMaxOperands];
    for (int k = 0; k < iter.ntensors(); ++k) data[k] = static_cast<char*>(iter.data_ptr(k));
    C10_CUDA_CHECK(
        cuda::launch_contiguous(pass, approximate, dtype, data, iter.numel(), stream));
    return;
  }
  // Other layouts take the rows or the strided kernel (gelu_cuda.cu picks), which index in 32
  // bits; larger iterations are split into pieces that fit.
  for (auto& piece : iter.with_32bit_indexing())
    launch_strided(piece, pass, approximate, dtype, stream);
}

}  // namespace

TORCH_LIBRARY_IMPL(gelu_ext, CUDA, m) {
  m.impl("gelu", &gelu_op<run_cuda>);
  m.impl("gelu_backward", &gelu_backward_op<run_cuda>);
  m.impl("gelu_double_backward", &gelu_double_backward_op<run_cuda>);
  m.impl("bias_gelu", &bias_gelu_op<run_cuda>);
  m.impl("bias_gelu_backward", &bias_gelu_backward_op<run_cuda>);
  m.impl("geglu", &geglu_op<run_cuda>);
  m.impl("geglu_backward", &geglu_backward_op<run_cuda>);
  m.impl("geglu_packed", &geglu_packed_op<run_cuda>);
  m.impl("geglu_packed_backward", &geglu_packed_backward_op<run_cuda>);
}

}  // namespace gelu_ext
