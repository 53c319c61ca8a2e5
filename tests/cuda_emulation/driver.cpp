// csrc/cuda/gelu_cuda.cu built for the CPU (see include/host_cuda.h), with a C interface for
// tests/test_cuda_emulated.py. GELU_CUDA_SOURCE names the copy of gelu_cuda.cu whose launches
// the test rewrote as gelu_emulation::launch calls.
#include "host_cuda.h"
#include GELU_CUDA_SOURCE

using gelu_ext::Approximate;
using gelu_ext::DType;
using gelu_ext::Pass;

extern "C" int emulated_launch_contiguous(int pass, int approximate, int dtype, char** data,
                                          int64_t n) {
  return gelu_ext::cuda::launch_contiguous(static_cast<Pass>(pass),
                                           static_cast<Approximate>(approximate),
                                           static_cast<DType>(dtype), data, n, nullptr);
}

// strides: num_operands(pass) rows of ndim byte strides, dimension 0 fastest.
extern "C" int emulated_launch_strided(int pass, int approximate, int dtype, char** data,
                                       int ndim, const int32_t* sizes, const int32_t* strides) {
  gelu_ext::cuda::StridedLayout layout{};
  layout.ndim = ndim;
  const int operands = gelu_ext::num_operands(static_cast<Pass>(pass));
  for (int d = 0; d < ndim; ++d) {
    layout.sizes[d] = sizes[d];
    for (int k = 0; k < operands; ++k) layout.strides[k][d] = strides[k * ndim + d];
  }
  return gelu_ext::cuda::launch_strided(static_cast<Pass>(pass),
                                        static_cast<Approximate>(approximate),
                                        static_cast<DType>(dtype), data, layout, nullptr);
}
