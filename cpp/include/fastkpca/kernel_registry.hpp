// The kernel registry: the table of kernel_list.hpp's declarations, and the one dispatch from a KernelKind
// to its tile functor.
#pragma once

#include <array>
#include <stdexcept>
#include <string>

#include "fastkpca/kernel_list.hpp"
#include "fastkpca/kernels.hpp"

namespace fastkpca {

struct KernelInfo {
  KernelKind kind;
  const char* name;
  const char* parameters;
  bool unit_diagonal;
  bool positive_semidefinite;
  const char* aliases;
};

inline constexpr std::array kernel_registry = {
#define FASTKPCA_KERNEL_INFO(name, functor, params, unit, psd, aliases) \
  KernelInfo{KernelKind::name, #name, params, unit, psd, aliases},
    FASTKPCA_KERNEL_LIST(FASTKPCA_KERNEL_INFO)
#undef FASTKPCA_KERNEL_INFO
};

inline const KernelInfo& kernel_info(KernelKind kind) {
  for (const KernelInfo& info : kernel_registry)
    if (info.kind == kind) return info;
  throw std::logic_error("kernel missing from the registry");  // unreachable: the table is the enum
}

// The kind named `name` (aliases included); std::invalid_argument for an unknown name.
inline KernelKind kernel_kind(const std::string& name) {
  for (const KernelInfo& info : kernel_registry) {
    if (name == info.name) return info.kind;
    const std::string aliases = info.aliases;
    size_t start = 0;
    while (start < aliases.size()) {
      const size_t end = std::min(aliases.find(',', start), aliases.size());
      if (aliases.compare(start, end - start, name) == 0 && end > start) return info.kind;
      start = end + 1;
    }
  }
  throw std::invalid_argument("unknown kernel '" + name + "'");
}

// f(functor, unit_diagonal) for the kernel of `params`; returns what f returns. The switch is generated
// from the same list as the enum and has no default (-Werror=switch: a gap does not compile), and each
// functor gets its kind as a template argument, so a functor that serves several kinds decides by
// `if constexpr` and a kind it does not know fails to compile (see DotKernel).
template <class S, class F>
decltype(auto) with_kernel(const KernelParams& params, F&& f) {
  switch (params.kind) {
#define FASTKPCA_KERNEL_CASE(name, functor, params_, unit, psd, aliases) \
  case KernelKind::name: return f(functor<S, KernelKind::name>{params}, unit);
    FASTKPCA_KERNEL_LIST(FASTKPCA_KERNEL_CASE)
#undef FASTKPCA_KERNEL_CASE
  }
  throw std::logic_error("invalid KernelKind value");
}

}  // namespace fastkpca
