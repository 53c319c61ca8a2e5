// Chooses the CPU kernels for this machine once, at the first call: AVX-512, AVX2 + FMA, or the
// portable ones. GELU_EXT_CPU_ISA=avx512|avx2|portable forces a choice (tests compare them).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "../kernels.h"

namespace gelu_ext {
namespace cpu {

using RunLoop = void (*)(Pass, Approximate, DType, char**, const int64_t*, int64_t, int64_t);
using AddToColumnSums = void (*)(DType, const char*, int64_t, int64_t, int64_t, int64_t, int64_t,
                                 double*, double*);

#define GELU_DECLARE_ISA(isa) \
  namespace isa {             \
  void run_loop(Pass, Approximate, DType, char**, const int64_t*, int64_t, int64_t); \
  void add_to_column_sums(DType, const char*, int64_t, int64_t, int64_t, int64_t, int64_t, double*, \
                          double*);                                                         \
  }
GELU_DECLARE_ISA(portable)
#if defined(__x86_64__) || defined(_M_X64)
GELU_DECLARE_ISA(avx2)
GELU_DECLARE_ISA(avx512)
#endif
#undef GELU_DECLARE_ISA

namespace {

struct Choice {
  const char* name;
  RunLoop run;
  AddToColumnSums add_to_column_sums;
};

bool supported(const char* isa) {
#if defined(__x86_64__) || defined(_M_X64)
  __builtin_cpu_init();
  if (std::strcmp(isa, "avx512") == 0)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  if (std::strcmp(isa, "avx2") == 0)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
#endif
  return std::strcmp(isa, "portable") == 0;
}

Choice choose() {
  const Choice choices[] = {
#if defined(__x86_64__) || defined(_M_X64)
      {"avx512", avx512::run_loop, avx512::add_to_column_sums},
      {"avx2", avx2::run_loop, avx2::add_to_column_sums},
#endif
      {"portable", portable::run_loop, portable::add_to_column_sums},
  };
  const char* forced = std::getenv("GELU_EXT_CPU_ISA");
  for (const Choice& c : choices) {
    if (forced && *forced && std::strcmp(forced, c.name) != 0) continue;
    if (supported(c.name)) return c;
    if (forced && *forced)
      std::fprintf(stderr, "gelu_ext: GELU_EXT_CPU_ISA=%s is not supported by this CPU\n", forced);
  }
  return Choice{"portable", portable::run_loop, portable::add_to_column_sums};
}

const Choice& chosen() {
  static const Choice choice = choose();
  return choice;
}

}  // namespace

void run_loop(Pass pass, Approximate approximate, DType dtype, char** data,
              const int64_t* strides, int64_t size0, int64_t size1) {
  chosen().run(pass, approximate, dtype, data, strides, size0, size1);
}

void add_to_column_sums(DType dtype, const char* values, int64_t stride, int64_t n, int64_t rows,
                        int64_t row_stride, int64_t column_step, double* hi, double* lo) {
  chosen().add_to_column_sums(dtype, values, stride, n, rows, row_stride, column_step, hi, lo);
}

const char* isa() { return chosen().name; }

// Outputs of many megabytes are written once, right after allocation, so that each of their 4 KB
// pages faults on first touch (glibc maps blocks over 32 MB afresh for every allocation, and a
// training step allocates its activations anew). On some machines the faults cost more than
// the GELU: filling a new 32 MB tensor took 20 ms with 4 KB pages, 5.5 ms with 2 MB pages and
// 3 ms once mapped (the 2-vCPU development VM). PyTorch asks for huge pages on every allocation
// under THP_MEM_ALLOC_ENABLE=1; this asks for them on the kernels' own outputs only.
void advise_huge_pages(const void* data, int64_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  static const bool enabled = [] {
    const char* setting = std::getenv("GELU_EXT_HUGE_PAGES");
    return setting == nullptr || std::strcmp(setting, "0") != 0;
  }();
  constexpr uintptr_t kHugePage = uintptr_t(1) << 21;
  const auto start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (start + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (start + static_cast<uintptr_t>(bytes)) & ~(kHugePage - 1);
  if (enabled && bytes > 0 && end > first)
    madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE);  // advice: ignore failure
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace cpu
}  // namespace gelu_ext
