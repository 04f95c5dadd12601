// Prints the best x86-64 ISA level of the CPU it runs on ("baseline", "v3" or "v4"): CMake compiles and runs
// it at configure time (try_run) when FASTKPCA_ISAS is "host", so that a source build compiles only the module
// the building CPU will import.
#include <cstdio>

#include "fastkpca/isa.hpp"

int main() {
  const fastkpca::IsaSupport s = fastkpca::isa_support();
  std::printf("%s", s.v4 ? "v4" : s.v3 ? "v3" : "baseline");
  return 0;
}
