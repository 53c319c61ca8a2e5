// csrc/cuda/gelu_cuda.cu built for the CPU (see include/host_cuda.h), with the launch plan of
// csrc/cuda/launch_plan.h, and a C interface for tests/test_cuda_emulated.py. GELU_CUDA_SOURCE
// names the copy of gelu_cuda.cu whose launches the test rewrote as gelu_emulation::launch calls.
#include "host_cuda.h"
#include GELU_CUDA_SOURCE
#include "launch_plan.h"

#include <cstring>
#include <string>

using gelu_ext::Approximate;
using gelu_ext::DType;
using gelu_ext::Pass;

// The stream that every entry point below hands the launchers, as cuda/ops_cuda.cpp hands them
// the current stream: a handle that no other launch has, so that the log shows whether each
// kernel was launched on it.
static const cudaStream_t kCallerStream = reinterpret_cast<cudaStream_t>(uintptr_t{0x5EA7});
extern "C" uint64_t emulated_caller_stream() {
  return reinterpret_cast<uintptr_t>(kCallerStream);
}

// The current device (host_cuda.h: 0 or 1, which hold 8 and 3 blocks per SM at once).
extern "C" void emulated_set_device(int device) { emulated_device = device; }

// index_width: 0 for 32 bits, 1 for 64.
extern "C" int emulated_launch_contiguous(int pass, int approximate, int dtype, char** data,
                                          int64_t n, int index_width) {
  return gelu_ext::cuda::launch_contiguous(
      static_cast<Pass>(pass), static_cast<Approximate>(approximate), static_cast<DType>(dtype),
      data, n, static_cast<gelu_ext::cuda::IndexWidth>(index_width), kCallerStream);
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
                                        static_cast<DType>(dtype), data, layout, kCallerStream);
}

namespace {
gelu_ext::cuda::Iteration make_iteration(int operands, char** data, int ndim,
                                         const int64_t* sizes, const int64_t* strides) {
  gelu_ext::cuda::Iteration it;
  it.ndim = ndim;
  for (int k = 0; k < operands; ++k) it.data[k] = data[k];
  for (int d = 0; d < ndim; ++d) {
    it.sizes[d] = sizes[d];
    for (int k = 0; k < operands; ++k) it.strides[k][d] = strides[k * ndim + d];
  }
  return it;
}
}  // namespace

// What cuda/ops_cuda.cpp does with a TensorIterator of this shape and these byte strides
// (dimension 0 fastest, as above), with index_limit in place of INT32_MAX.
extern "C" int emulated_launch_iteration(int pass, int approximate, int dtype, char** data,
                                         int ndim, const int64_t* sizes, const int64_t* strides,
                                         int64_t index_limit) {
  const auto it = make_iteration(gelu_ext::num_operands(static_cast<Pass>(pass)), data, ndim,
                                 sizes, strides);
  return gelu_ext::cuda::launch_iteration(static_cast<Pass>(pass),
                                          static_cast<Approximate>(approximate),
                                          static_cast<DType>(dtype), it, kCallerStream, index_limit);
}

// The pieces launch_iteration cuts such an iteration into, in launch order: for each, its
// element count, its first operand's start (a byte offset from data[0]) and the largest byte
// offset plus one of any operand, into pieces[3 i .. 3 i + 2] while i < capacity. Returns the
// number of pieces.
extern "C" int64_t emulated_plan_pieces(int operands, char** data, int ndim, const int64_t* sizes,
                                        const int64_t* strides, int64_t index_limit,
                                        int64_t* pieces, int64_t capacity) {
  int64_t count = 0;
  gelu_ext::cuda::for_each_piece(
      make_iteration(operands, data, ndim, sizes, strides), operands, index_limit,
      [&](const gelu_ext::cuda::Iteration& piece) {
        int64_t span = 0;
        for (int k = 0; k < operands; ++k) {
          int64_t end = 1;
          for (int d = 0; d < piece.ndim; ++d) end += (piece.sizes[d] - 1) * piece.strides[k][d];
          span = end > span ? end : span;
        }
        if (count < capacity) {
          pieces[3 * count] = gelu_ext::cuda::numel(piece);
          pieces[3 * count + 1] = piece.data[0] - data[0];
          pieces[3 * count + 2] = span;
        }
        ++count;
        return cudaSuccess;
      });
  return count;
}

// The launches logged so far, one "kernel<...> grid block" line each: written into `text` and
// taken off the log if they fit in `size` bytes; returns the bytes needed.
extern "C" int64_t emulated_take_launches(char* text, int64_t size) {
  std::string all;
  for (const auto& l : gelu_emulation::launches)
    all += l.kernel + " " + std::to_string(l.grid) + " " + std::to_string(l.block) + " " +
           std::to_string(reinterpret_cast<uintptr_t>(l.stream)) + "\n";
  const int64_t needed = static_cast<int64_t>(all.size()) + 1;
  if (size >= needed) {
    std::memcpy(text, all.c_str(), static_cast<size_t>(needed));
    gelu_emulation::launches.clear();
  }
  return needed;
}

namespace {
template <Approximate A, DType D>
void float_path_forward(const void* x, void* y, uint8_t* sure, int64_t n) {
  using T = typename gelu_ext::cuda::Storage<D>::T;
  for (int64_t i = 0; i < n; ++i) {
    T in[1][1] = {{static_cast<const T*>(x)[i]}}, out[1][1];
    sure[i] = gelu_ext::cuda::apply_float_path<Pass::kForward, A, D, 1>(in, out, 0);
    static_cast<T*>(y)[i] = out[0][0];
  }
}
template <DType D>
void float_path_forward(int approximate, const void* x, void* y, uint8_t* sure, int64_t n) {
  switch (static_cast<Approximate>(approximate)) {
    case Approximate::kNone: return float_path_forward<Approximate::kNone, D>(x, y, sure, n);
    case Approximate::kTanh: return float_path_forward<Approximate::kTanh, D>(x, y, sure, n);
    case Approximate::kSigmoid: return float_path_forward<Approximate::kSigmoid, D>(x, y, sure, n);
  }
}
}  // namespace

// The 16-bit forward's float-path step (gelu_cuda.cu's apply_float_path, which the kernels run
// only on the narrow path's leftovers, where FP64 is slow) on each of n 16-bit inputs: its
// rounded result, and whether it calls that result surely the correctly rounded one.
extern "C" void emulated_float_path_forward(int approximate, int dtype, const void* x, void* y,
                                            uint8_t* sure, int64_t n) {
  if (static_cast<DType>(dtype) == DType::kBFloat16)
    float_path_forward<DType::kBFloat16>(approximate, x, y, sure, n);
  else
    float_path_forward<DType::kFloat16>(approximate, x, y, sure, n);
}
