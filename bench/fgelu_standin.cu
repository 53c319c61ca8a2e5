// A stand-in for PyTorch's own CUDA kernels of F.gelu and its backward, for bench/gpu_model.py:
// it is compiled and counted as gelu_ext's kernels are, so that the model compares like with like.
// Never linked into gelu_ext.
//
// What it imitates (ATen, aten/src/ATen/native/cuda/ActivationGeluKernel.cu and CUDALoops.cuh):
// - the formulas evaluated in ATen's "opmath" type: float for float32, float16 and bfloat16 data,
//   double for float64, with erf / tanh / exp from the CUDA math library;
// - the vectorized elementwise kernel of contiguous operands: 128 threads per block, each thread
//   handles 8 elements (every operand together more than one byte) as 16-byte vectors
//   (16 / sizeof(element) elements each), loaded vector by vector at a stride of 128 vectors, then
//   computed and stored the same way; one block per 1024 elements, no grid-stride loop.
// F.gelu has no sigmoid form; its row is x·σ(1.702x) fused into one kernel the same way (ATen's
// sigmoid is 1 / (1 + exp(−x))), which is what torch.compile would make of it; eager PyTorch runs
// it as three kernels and moves three times the data.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace standin {

template <class T>
struct OpMath {
  using type = float;
};
template <>
struct OpMath<double> {
  using type = double;
};

constexpr int kThreads = 128, kElementsPerThread = 8;

// Forms: 0 exact (x Φ(x)), 1 tanh approximation, 2 x·σ(1.702x).
template <int Form, class O>
__device__ __forceinline__ O forward(O x) {
  if constexpr (Form == 0) {
    return x * O(0.5) * (O(1) + erf(x * O(M_SQRT1_2)));
  } else if constexpr (Form == 1) {
    const O beta = O(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = O(0.044715);
    const O inner = beta * (x + kappa * (x * x * x));
    return O(0.5) * x * (O(1) + tanh(inner));
  } else {
    return x * (O(1) / (O(1) + exp(-(O(1.702) * x))));
  }
}

template <int Form, class O>
__device__ __forceinline__ O backward(O dy, O x) {
  if constexpr (Form == 0) {
    const O cdf = O(0.5) * (O(1) + erf(x * O(M_SQRT1_2)));
    const O pdf = exp(O(-0.5) * x * x) * O(M_2_SQRTPI * M_SQRT1_2 * 0.5);
    return dy * (cdf + x * pdf);
  } else if constexpr (Form == 1) {
    const O beta = O(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = O(0.044715);
    const O x2 = x * x;
    const O t = tanh(beta * (x + kappa * (x2 * x)));
    const O half_x = O(0.5) * x;
    const O dtanh = O(1) - t * t;
    const O dinner = beta * (O(1) + O(3) * kappa * x2);
    return dy * (O(0.5) * (O(1) + t) + half_x * dtanh * dinner);
  } else {
    const O s = O(1) / (O(1) + exp(-(O(1.702) * x)));
    return dy * (s + O(1.702) * x * s * (O(1) - s));
  }
}

template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

// Pass 0: out = f(in0); pass 1: out = in0 · f'(in1).
template <int Pass, int Form, class T>
__global__ void __launch_bounds__(kThreads) gelu_standin(T* out, const T* in0, const T* in1) {
  using O = typename OpMath<T>::type;
  constexpr int kVec = 16 / sizeof(T), kLoads = kElementsPerThread / kVec;
  using V = Vec<T, kVec>;
  const long block_start = static_cast<long>(blockIdx.x) * kThreads * kElementsPerThread;
  const V* a = reinterpret_cast<const V*>(in0 + block_start);
  const V* b = reinterpret_cast<const V*>(in1 + block_start);
  V* y = reinterpret_cast<V*>(out + block_start);
  V va[kLoads], vb[kLoads];
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    va[i] = a[threadIdx.x + i * kThreads];
    if constexpr (Pass == 1) vb[i] = b[threadIdx.x + i * kThreads];
  }
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    V r;
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const O v = static_cast<O>(va[i].v[e]);
      r.v[e] = static_cast<T>(Pass == 0 ? forward<Form>(v)
                                        : backward<Form>(v, static_cast<O>(vb[i].v[e])));
    }
    y[threadIdx.x + i * kThreads] = r;
  }
}

template <int Pass, int Form>
void instantiate_dtypes() {
  gelu_standin<Pass, Form, float><<<1, kThreads>>>(nullptr, nullptr, nullptr);
  gelu_standin<Pass, Form, double><<<1, kThreads>>>(nullptr, nullptr, nullptr);
  gelu_standin<Pass, Form, __half><<<1, kThreads>>>(nullptr, nullptr, nullptr);
  gelu_standin<Pass, Form, __nv_bfloat16><<<1, kThreads>>>(nullptr, nullptr, nullptr);
}

// Instantiates every (pass, form, dtype); never called.
void instantiate_all() {
  instantiate_dtypes<0, 0>();
  instantiate_dtypes<0, 1>();
  instantiate_dtypes<0, 2>();
  instantiate_dtypes<1, 0>();
  instantiate_dtypes<1, 1>();
  instantiate_dtypes<1, 2>();
}

}  // namespace standin
