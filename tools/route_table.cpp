// Prints the route table of csrc/math/route.h as markdown: which numeric path serves each device,
// dtype and pass (rows split by form or architecture only where those change the path).
// DEVELOPERS.md carries its output; tests/test_route_table.py checks that they agree.
//
//   g++ -std=c++17 -I csrc tools/route_table.cpp -o /tmp/route_table && /tmp/route_table
//   /tmp/route_table --list    # every case on a line: device arch dtype pass form path
#include <cstdio>
#include <string>
#include <vector>

#include "math/route.h"

using namespace gelu_ext;

namespace {

const Pass kPasses[] = {Pass::kForward,      Pass::kBackward,     Pass::kDoubleBackward,
                        Pass::kBiasForward,  Pass::kBiasBackward, Pass::kGegluForward,
                        Pass::kGegluBackward};
const char* const kPassNames[] = {"forward",      "backward", "double backward", "bias forward",
                                  "bias backward", "geglu forward", "geglu backward"};
const Approximate kForms[] = {Approximate::kNone, Approximate::kTanh, Approximate::kSigmoid};
const char* const kFormNames[] = {"none", "tanh", "sigmoid"};
const DType kDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64};
const char* const kDtypeNames[] = {"float32", "float16", "bfloat16", "float64"};
// The architectures a route may tell apart: the CPU's ISAs, and every CUDA architecture a build
// may compile (__CUDA_ARCH__ values).
const int kCpuArchs[] = {kIsaPortable, kIsaAvx2, kIsaAvx512};
const char* const kCpuArchNames[] = {"portable", "AVX2", "AVX-512"};
const int kCudaArchs[] = {750, 800, 860, 870, 890, 900, 1000, 1030, 1100, 1200, 1210};

std::string paths(Device device, DType dtype, Approximate form, int arch) {
  std::string row;
  for (Pass pass : kPasses) {
    row += std::string(" | ") + path_name(route(device, dtype, pass, form, arch));
    if (float_path_first(device, dtype, pass, arch)) row += " (leftovers: f32_via_f32 first)";
  }
  return row;
}

// Every case on a line, for tests: device, arch (sm_86, avx2, ...), dtype, pass, form, path.
void list() {
  for (int d = 0; d < 2; ++d) {
    const Device device = d == 0 ? Device::kCpu : Device::kCuda;
    const int count = device == Device::kCpu ? 3 : int(sizeof kCudaArchs / sizeof *kCudaArchs);
    for (int a = 0; a < count; ++a) {
      const int arch = device == Device::kCpu ? kCpuArchs[a] : kCudaArchs[a];
      const std::string arch_name = device == Device::kCpu ? std::string(kCpuArchNames[a])
                                                           : "sm_" + std::to_string(arch / 10);
      for (int t = 0; t < 4; ++t)
        for (size_t p = 0; p < sizeof kPasses / sizeof *kPasses; ++p)
          for (int f = 0; f < 3; ++f)
            std::printf("%s\t%s\t%s\t%s\t%s\t%s\n", device == Device::kCpu ? "CPU" : "CUDA",
                        arch_name.c_str(), kDtypeNames[t], kPassNames[p], kFormNames[f],
                        path_name(route(device, kDtypes[t], kPasses[p], kForms[f], arch)));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--list") {
    list();
    return 0;
  }
  std::printf("| device | dtype | form | arch |");
  for (const char* name : kPassNames) std::printf(" %s |", name);
  std::printf("\n|---|---|---|---|");
  for (size_t i = 0; i < sizeof kPassNames / sizeof *kPassNames; ++i) std::printf("---|");
  std::printf("\n");
  for (int d = 0; d < 2; ++d) {
    const Device device = d == 0 ? Device::kCpu : Device::kCuda;
    std::vector<int> archs;
    std::vector<std::string> arch_names;
    if (device == Device::kCpu) {
      for (int i = 0; i < 3; ++i) archs.push_back(kCpuArchs[i]), arch_names.push_back(kCpuArchNames[i]);
    } else {
      for (int a : kCudaArchs) {
        archs.push_back(a);
        arch_names.push_back("sm_" + std::to_string(a / 10));
      }
    }
    for (int t = 0; t < 4; ++t) {
      // Forms and architectures are listed only where they change a path.
      bool by_form = false, by_arch = false;
      for (int f = 0; f < 3; ++f)
        for (size_t a = 0; a < archs.size(); ++a) {
          const std::string p = paths(device, kDtypes[t], kForms[f], archs[a]);
          if (p != paths(device, kDtypes[t], kForms[0], archs[a])) by_form = true;
          if (p != paths(device, kDtypes[t], kForms[f], archs[0])) by_arch = true;
        }
      for (int f = 0; f < (by_form ? 3 : 1); ++f) {
        // Consecutive architectures with the same paths share a row.
        size_t a = 0;
        while (a < archs.size()) {
          size_t b = a + 1;
          const std::string p = paths(device, kDtypes[t], kForms[f], archs[a]);
          if (by_arch)
            while (b < archs.size() && paths(device, kDtypes[t], kForms[f], archs[b]) == p) ++b;
          else
            b = archs.size();
          std::string arch = !by_arch ? "any"
                             : b - a == 1 ? arch_names[a]
                                          : arch_names[a] + " to " + arch_names[b - 1];
          std::printf("| %s | %s | %s | %s%s |\n", device == Device::kCpu ? "CPU" : "CUDA",
                      kDtypeNames[t], by_form ? kFormNames[f] : "any", arch.c_str(), p.c_str());
          a = b;
        }
      }
    }
  }
}
