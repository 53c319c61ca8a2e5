// Checks the error bounds of gelu_math.h's narrow (float) path against long double, for every
// float x in each variant's core domain (or every `step`-th one): the bound must hold everywhere,
// since the kernels' rounding test relies on it. Prints, per variant and function, the largest
// |value - exact| / error (must stay below 1) and the largest relative error. Then the same for
// the cubics of the CPU's 16-bit bias passes (narrow_cubic), at every float in their cells.
//
//   g++ -O2 -std=c++17 -ffp-contract=off -I csrc tools/check_narrow_bounds.cpp -o /tmp/check \
//       -lpthread && /tmp/check [step [none|tanh|sigmoid]]
//
// This checks the portable code (scalar float, IEEE division). The vector kernels use other
// reciprocals and the GPU other exp and reciprocal instructions; tests/test_cpu_kernels.py and
// bench/gpu_check.sh check those exhaustively on 16-bit inputs.
#include <math.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "cpu/loops.h"
#include "exact_reference.h"
#include "gelu_math.h"

using namespace gelu_ext;
using ld = long double;

namespace {

template <Approximate A>
void check(uint64_t step) {
  const float core = math::narrow_core<A>();
  uint32_t top;
  memcpy(&top, &core, 4);
  const int threads = 2;
  std::vector<double> ratio_f(threads), ratio_d(threads), rel_f(threads);
  std::vector<float> worst_f(threads), worst_d(threads);
  std::vector<std::thread> pool;
  for (int id = 0; id < threads; ++id) {
    pool.emplace_back([&, id] {
      for (uint64_t b = id * step; b <= top; b += threads * step) {
        for (int sign = 0; sign < 2; ++sign) {
          const uint32_t bits = static_cast<uint32_t>(b) | (sign ? 0x80000000u : 0u);
          float x;
          memcpy(&x, &bits, 4);
          math::Bounded<float> f, d1;
          math::narrow_value_and_derivative<A>(x, f, d1);
          if (!(f.error < INFINITY)) continue;
          const tools::Exact exact = tools::exact(x, A);
          const ld ef = exact.f, ed = exact.d1;
          const double rf = f.error > 0 ? static_cast<double>(fabsl(f.value - ef) / f.error) : 0;
          const double rd = static_cast<double>(fabsl(d1.value - ed) / d1.error);
          if (rf > ratio_f[id]) ratio_f[id] = rf, worst_f[id] = x;
          if (rd > ratio_d[id]) ratio_d[id] = rd, worst_d[id] = x;
          if (fabsl(ef) > 1e-30L)  // relative errors of float-normal results
            rel_f[id] = fmax(rel_f[id], static_cast<double>(fabsl(f.value / ef - 1)));
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  double rf = 0, rd = 0, relf = 0;
  float wf = 0, wd = 0;
  for (int id = 0; id < threads; ++id) {
    if (ratio_f[id] > rf) rf = ratio_f[id], wf = worst_f[id];
    if (ratio_d[id] > rd) rd = ratio_d[id], wd = worst_d[id];
    relf = fmax(relf, rel_f[id]);
  }
  printf("%-8s |x| <= %-4g f: max error/bound %.3f (x=%.8g), max relative error 2^%.2f;  "
         "f': max error/bound %.3f (x=%.8g)\n",
         A == Approximate::kNone ? "none" : A == Approximate::kTanh ? "tanh" : "sigmoid", core,
         rf, wf, relf > 0 ? log2(relf) : -999.0, rd, wd);
}

// The cubics of the CPU's 16-bit bias passes (gelu_math.h, narrow_cubic), for f and f', at every
// float x in a cell (or every `step`-th one).
template <Approximate A>
void check_cubics(uint64_t step) {
  const cpu::portable::CubicRow* tables[2] = {cpu::portable::CubicTable<A, false>::get(),
                                     cpu::portable::CubicTable<A, true>::get()};
  const uint64_t first = uint64_t(math::kCellFirstExponent) << 23;
  const uint64_t end = uint64_t(math::kCellLastExponent + 1) << 23;
  const int threads = 2;
  std::vector<double> ratio[2] = {std::vector<double>(threads), std::vector<double>(threads)};
  std::vector<float> worst[2] = {std::vector<float>(threads), std::vector<float>(threads)};
  std::vector<std::thread> pool;
  for (int id = 0; id < threads; ++id) {
    pool.emplace_back([&, id] {
      for (uint64_t b = first + id * step; b < end; b += threads * step) {
        for (int sign = 0; sign < 2; ++sign) {
          const uint32_t bits = static_cast<uint32_t>(b) | (sign ? 0x80000000u : 0u);
          float x;
          memcpy(&x, &bits, 4);
          uint32_t row;
          float d;
          if (!math::cell_of(x, row, d)) continue;
          const tools::Exact exact = tools::exact(x, A);
          for (int k = 0; k < 2; ++k) {
            const math::Bounded<float> v = math::narrow_cubic(tables[k][row].c, d);
            const double r = static_cast<double>(fabsl(v.value - (k ? exact.d1 : exact.f)) / v.error);
            if (r > ratio[k][id]) ratio[k][id] = r, worst[k][id] = x;
          }
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  printf("%-8s cubics, 2^-32 <= |x| < 8:", A == Approximate::kNone   ? "none"
                                          : A == Approximate::kTanh ? "tanh"
                                                                    : "sigmoid");
  for (int k = 0; k < 2; ++k) {
    double r = 0;
    float w = 0;
    for (int id = 0; id < threads; ++id)
      if (ratio[k][id] > r) r = ratio[k][id], w = worst[k][id];
    printf("  %s: max error/bound %.3f (x=%.8g)", k ? "f'" : "f", r, w);
  }
  printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t step = argc > 1 ? strtoull(argv[1], nullptr, 10) : 1;
  const char* only = argc > 2 ? argv[2] : nullptr;
  auto wanted = [&](const char* name) { return !only || strcmp(only, name) == 0; };
  if (wanted("none")) check<Approximate::kNone>(step), check_cubics<Approximate::kNone>(step);
  if (wanted("tanh")) check<Approximate::kTanh>(step), check_cubics<Approximate::kTanh>(step);
  if (wanted("sigmoid")) {
    check<Approximate::kSigmoid>(step);
    check_cubics<Approximate::kSigmoid>(step);
  }
}
