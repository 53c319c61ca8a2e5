// Checks the error bounds of gelu_math.h's narrow (float) path against long double, for every
// float x in each variant's core domain (or every `step`-th one): the bound must hold everywhere,
// since the kernels' rounding test relies on it. Prints, per variant and function, the largest
// |value - exact| / error (must stay below 1) and the largest relative error. Then the same for
// the cubics of the CPU's 16-bit bias passes (narrow_cubic), at every float in their cells.
//
//   g++ -O2 -std=c++17 -ffp-contract=off -I csrc tools/check_narrow_bounds.cpp -o /tmp/check \
//       -lpthread && /tmp/check [step [none|tanh|sigmoid|all [cubics]]]
// ("cubics": the cubics alone.)
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

constexpr int kThreads = 2;

const char* variant_name(Approximate a) {
  return a == Approximate::kNone ? "none" : a == Approximate::kTanh ? "tanh" : "sigmoid";
}

// Calls visit(x, thread) for the floats of both signs whose magnitude bits are first,
// first + step, ... below end, split among kThreads threads.
template <class Visit>
void for_each_float(uint64_t first, uint64_t end, uint64_t step, Visit visit) {
  std::vector<std::thread> pool;
  for (int id = 0; id < kThreads; ++id) {
    pool.emplace_back([&, id] {
      for (uint64_t b = first + id * step; b < end; b += kThreads * step) {
        for (int sign = 0; sign < 2; ++sign) {
          const uint32_t bits = static_cast<uint32_t>(b) | (sign ? 0x80000000u : 0u);
          float x;
          memcpy(&x, &bits, 4);
          visit(x, id);
        }
      }
    });
  }
  for (auto& t : pool) t.join();
}

// The largest error/bound ratio seen, and where; one per thread, then the largest of those.
struct Worst {
  double ratio = 0;
  float x = 0;
  void see(double r, float at) {
    if (r > ratio) ratio = r, x = at;
  }
};
Worst largest(const std::vector<Worst>& per_thread) {
  Worst w;
  for (const Worst& t : per_thread) w.see(t.ratio, t.x);
  return w;
}

template <Approximate A>
void check(uint64_t step) {
  const float core = math::narrow_core<A>();
  uint32_t top;
  memcpy(&top, &core, 4);
  std::vector<Worst> worst_f(kThreads), worst_d(kThreads);
  std::vector<double> rel_f(kThreads);
  for_each_float(0, uint64_t(top) + 1, step, [&](float x, int id) {
    math::Bounded<float> f, d1;
    math::narrow_value_and_derivative<A>(x, f, d1);
    if (!(f.error < INFINITY)) return;
    const tools::Exact exact = tools::exact(x, A);
    const ld ef = exact.f, ed = exact.d1;
    worst_f[id].see(f.error > 0 ? static_cast<double>(fabsl(f.value - ef) / f.error) : 0, x);
    worst_d[id].see(static_cast<double>(fabsl(d1.value - ed) / d1.error), x);
    if (fabsl(ef) > 1e-30L)  // relative errors of float-normal results
      rel_f[id] = fmax(rel_f[id], static_cast<double>(fabsl(f.value / ef - 1)));
  });
  const Worst wf = largest(worst_f), wd = largest(worst_d);
  double relf = 0;
  for (double r : rel_f) relf = fmax(relf, r);
  printf("%-8s |x| <= %-4g f: max error/bound %.3f (x=%.8g), max relative error 2^%.2f;  "
         "f': max error/bound %.3f (x=%.8g)\n",
         variant_name(A), core, wf.ratio, wf.x, relf > 0 ? log2(relf) : -999.0, wd.ratio, wd.x);
}

// The cubics of the CPU's 16-bit bias passes (gelu_math.h, narrow_cubic), for f and f', at every
// float x in a cell (or every `step`-th one).
template <Approximate A>
void check_cubics(uint64_t step) {
  const cpu::portable::CubicRow* tables[2] = {cpu::portable::CubicTable<A, false>::get(),
                                              cpu::portable::CubicTable<A, true>::get()};
  std::vector<Worst> worst[2] = {std::vector<Worst>(kThreads), std::vector<Worst>(kThreads)};
  for_each_float(uint64_t(math::kCellFirstExponent) << 23,
                 uint64_t(math::kCellLastExponent + 1) << 23, step, [&](float x, int id) {
    uint32_t row;
    float d;
    if (!math::cell_of(x, row, d)) return;
    const tools::Exact exact = tools::exact(x, A);
    for (int k = 0; k < 2; ++k) {
      const math::Bounded<float> v = k ? math::narrow_cubic<true>(tables[k][row].c, d)
                                       : math::narrow_cubic<false>(tables[k][row].c, d);
      worst[k][id].see(static_cast<double>(fabsl(v.value - (k ? exact.d1 : exact.f)) / v.error), x);
    }
  });
  printf("%-8s cubics, 2^-32 <= |x| < 8:", variant_name(A));
  for (int k = 0; k < 2; ++k) {
    const Worst w = largest(worst[k]);
    printf("  %s: max error/bound %.3f (x=%.8g)", k ? "f'" : "f", w.ratio, w.x);
  }
  printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // each line as it is found
  const uint64_t step = argc > 1 ? strtoull(argv[1], nullptr, 10) : 1;
  const char* only = argc > 2 && strcmp(argv[2], "all") != 0 ? argv[2] : nullptr;
  const bool narrow = !(argc > 3 && strcmp(argv[3], "cubics") == 0);
  auto wanted = [&](const char* name) { return !only || strcmp(only, name) == 0; };
  if (wanted("none")) {
    if (narrow) check<Approximate::kNone>(step);
    check_cubics<Approximate::kNone>(step);
  }
  if (wanted("tanh")) {
    if (narrow) check<Approximate::kTanh>(step);
    check_cubics<Approximate::kTanh>(step);
  }
  if (wanted("sigmoid")) {
    if (narrow) check<Approximate::kSigmoid>(step);
    check_cubics<Approximate::kSigmoid>(step);
  }
}
