// CUDA implementations of the gelu_ext ops: device guard and current stream, then the launch plan
// of cuda/launch_plan.h (which kernel, which pieces), with a check of every launch. The kernels
// themselves are in gelu_cuda.cu, which sees no torch.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../ops.h"
#include "launch_plan.h"

namespace gelu_ext {
namespace {

void run_cuda(at::TensorIteratorBase& iter, Pass pass, Approximate approximate) {
  if (iter.numel() == 0) return;
  TORCH_INTERNAL_ASSERT(iter.ndim() <= cuda::kMaxDims && iter.ntensors() <= kMaxOperands);
  const c10::cuda::CUDAGuard guard(iter.device());
  cuda::Iteration it;
  it.ndim = static_cast<int>(iter.ndim());
  for (int d = 0; d < iter.ndim(); ++d) it.sizes[d] = iter.shape()[d];
  for (int k = 0; k < iter.ntensors(); ++k) {
    it.data[k] = static_cast<char*>(iter.data_ptr(k));
    for (int d = 0; d < iter.ndim(); ++d) it.strides[k][d] = iter.strides(k)[d];
  }
  C10_CUDA_CHECK(cuda::launch_iteration(pass, approximate, kernel_dtype(iter), it,
                                        c10::cuda::getCurrentCUDAStream()));
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
