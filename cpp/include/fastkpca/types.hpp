// Matrix types shared by the core. NumPy hands the core C-ordered (row-major) arrays; every bound type
// says its storage order explicitly.
#pragma once

#include <Eigen/Core>

namespace fastkpca {

using Index = Eigen::Index;

template <class S>
using RowMatrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class S>
using ColMatrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
template <class S>
using Vector = Eigen::Matrix<S, Eigen::Dynamic, 1>;

// A writable view of a row-major matrix owned by someone else (a NumPy buffer).
template <class S>
using RowMatrixMap = Eigen::Map<RowMatrix<S>>;
template <class S>
using ConstRowMatrixMap = Eigen::Map<const RowMatrix<S>>;

}  // namespace fastkpca
