// The private extension module (one per ISA level, see CMakeLists.txt).
#include "common.hpp"
#include "fastkpca/background_release.hpp"
#include "fastkpca/spare_buffer.hpp"

PYBIND11_MODULE(FASTKPCA_MODULE_NAME, m) {
  m.doc() = "fastkpca native core (private; use the fastkpca package)";
  fastkpca::install_fork_guard();
  fastkpca::install_release_fork_guard();
  fastkpca::install_spare_fork_guard();
  fastkpca::bindings::init_info(m);
  fastkpca::bindings::init_gram(m);
  fastkpca::bindings::init_spectral(m);
  fastkpca::bindings::init_operators(m);
  fastkpca::bindings::init_blocks(m);
  fastkpca::bindings::init_sparse(m);
  fastkpca::bindings::init_gaussian_process(m);
  fastkpca::bindings::init_svm(m);
}
