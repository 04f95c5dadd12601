# Type stubs for the native core modules fastkpca._core_{baseline,v3,v4,generic} (all share this
# interface; the build installs a copy of this file under each module's name). Private API: use the
# fastkpca package's functions instead.
from typing import Callable, Literal, TypeVar

import numpy as np
from numpy.typing import NDArray

_F = TypeVar("_F", np.float32, np.float64)

ISA: str
VERSION: str
#: The kernel registry (cpp/include/fastkpca/kernel_list.hpp): name, parameters, unit_diagonal,
#: positive_semidefinite, aliases for each kernel.
KERNELS: list[dict[str, object]]

# Every name and alias of KERNELS (tests/test_registry.py checks this against the registry).
_Kernel = Literal["linear", "poly", "polynomial", "rbf", "matern12", "matern32", "matern52", "laplacian", "sigmoid",
                  "cosine"]

# The arithmetic of a pass's products: "float32" lets float32 kernel entries multiply in float32.
_Products = Literal["float64", "float32"]

def supported_isas() -> list[str]: ...
def build_info() -> dict[str, object]: ...
def omp_max_threads() -> int: ...
#: The thread count that asks for a short call's team (the default cut to the cores no other thread holds).
SHORT_CALL_TEAM: int
def short_call_team() -> int: ...
def simd_bytes() -> int: ...
def fma_rate(threads: int, seconds: float, dtype: Literal["float64", "float32"]) -> float: ...
def vector_exp(x: NDArray[_F]) -> NDArray[_F]: ...
def _sanitizer_probe(defect: Literal["heap-buffer-overflow", "misaligned"]) -> None: ...  # sanitizer builds only
def gram_into(
    x: NDArray[_F],
    y: NDArray[_F] | None,
    kernel: _Kernel,
    gamma: float,
    degree: float,
    coef0: float,
    out: NDArray[_F],
    n_threads: int,
) -> None: ...
def kernel_diagonal_into(
    x: NDArray[_F], kernel: _Kernel, gamma: float, degree: float, coef0: float, out: NDArray[_F], n_threads: int
) -> None: ...
def cross_product_into(
    x: NDArray[_F], y: NDArray[_F], kernel: _Kernel, gamma: float, degree: float, coef0: float,
    v: NDArray[np.float64], out: NDArray[np.float64], n_threads: int,
) -> None: ...
# A canonical CSR matrix as the sparse entry points take it: (indptr, indices, values, n_columns).
_Sparse = tuple[NDArray[np.int64], NDArray[np.int32], NDArray[_F], int]

def sparse_gram_into(
    x: _Sparse[_F], y: _Sparse[_F] | None, kernel: _Kernel, gamma: float, degree: float, coef0: float,
    out: NDArray[_F], n_threads: int,
) -> None: ...
def sparse_kernel_diagonal_into(
    x: _Sparse[_F], kernel: _Kernel, gamma: float, degree: float, coef0: float, out: NDArray[_F], n_threads: int
) -> None: ...
def sparse_cross_product_into(
    x: _Sparse[_F], y: _Sparse[_F], kernel: _Kernel, gamma: float, degree: float, coef0: float,
    v: NDArray[np.float64], out: NDArray[np.float64], n_threads: int,
) -> None: ...
def sparse_kernel_operator(
    x: _Sparse[_F], kernel: _Kernel, gamma: float, degree: float, coef0: float, cached_tile_rows: int, n_threads: int
) -> Operator: ...
# A sum of registry kernels on scaled samples (a Gaussian process kernel): (kernel or "constant", weight, gamma, x,
# y or None) per term.
_Term = tuple[str, float, float, NDArray[np.float64], NDArray[np.float64] | None]

def sum_gram_into(terms: list[_Term], white: float, out: NDArray[np.float64], n_threads: int) -> None: ...
def sum_cross_product_into(
    terms: list[_Term], v: NDArray[np.float64], out: NDArray[np.float64], n_threads: int
) -> None: ...
def sum_kernel_operator(
    terms: list[_Term], white: float, cached_tile_rows: int, n_threads: int, zero_diagonal: bool = False
) -> Operator: ...
def gp_gradient_pass(
    x: NDArray[np.float64], w: NDArray[np.float64], kind: Literal["rbf", "matern12", "matern32", "matern52"],
    want_product: bool, n_threads: int,
) -> tuple[float, float, NDArray[np.float64] | None]: ...
def gp_gradient_pass_low_rank(
    x: NDArray[np.float64], a: NDArray[np.float64], b: NDArray[np.float64],
    kind: Literal["rbf", "matern12", "matern32", "matern52"], want_product: bool, n_threads: int,
) -> tuple[float, float, NDArray[np.float64] | None]: ...
def gp_gradient_cross_pass(
    x: NDArray[np.float64], y: NDArray[np.float64], w: NDArray[np.float64],
    kind: Literal["rbf", "matern12", "matern32", "matern52"], want_product: bool,
) -> tuple[float, float, NDArray[np.float64] | None]: ...
def factor_product_into(f: NDArray[_F], c: NDArray[np.float64], out: NDArray[np.float64], n_threads: int) -> None: ...
def factor_t_product_into(f: NDArray[_F], v: NDArray[np.float64], out: NDArray[np.float64], n_threads: int) -> None: ...
def factor_gram_into(f: NDArray[_F], d: NDArray[np.float64], out: NDArray[np.float64], n_threads: int) -> None: ...
def tall_scratch_bytes(r: int, itemsize: int) -> int: ...
def symmetric_sum(w: NDArray[np.float64], n_threads: int) -> float: ...
def laplace_system_into(k: NDArray[np.float64], s: NDArray[np.float64], out: NDArray[np.float64],
                        n_threads: int) -> None: ...
def gp_weights_in_place(w: NDArray[np.float64], a: NDArray[np.float64], outer_weight: float, inverse_weight: float,
                        n_threads: int) -> None: ...
def laplace_weights_in_place(w: NDArray[np.float64], s: NDArray[np.float64], a: NDArray[np.float64],
                             u: NDArray[np.float64], v: NDArray[np.float64], n_threads: int) -> None: ...
def double_center_inplace(
    k: NDArray[_F], input: Literal["kernel", "distances", "squared_distances"], alpha: float, n_threads: int
) -> tuple[bool, NDArray[np.float64], float]: ...
def center_cross_inplace(
    k: NDArray[_F], fit_col_mean: NDArray[np.float64], fit_grand_mean: float, n_threads: int
) -> None: ...
def scan_square(a: NDArray[_F], check_symmetry: bool, n_threads: int) -> tuple[bool, float, float]: ...
class Operator:
    @property
    def n(self) -> int: ...
    @property
    def storage(self) -> str: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def scalar_bytes(self) -> int: ...
    def pass_cost(self, b: int) -> dict[str, float]: ...
    def matmat(
        self, v: NDArray[np.float64], n_threads: int, products: _Products = "float64"
    ) -> NDArray[np.float64]: ...
    def row_sums(self, n_threads: int) -> NDArray[np.float64]: ...
    def trace(self, n_threads: int) -> float: ...
    def centered(self) -> Operator: ...
    def shifted(self, alpha: float) -> Operator: ...
    def normalized(self, scale: NDArray[np.float64], diagonal: NDArray[np.float64]) -> Operator: ...

# The packed layout (cpp/include/fastkpca/packed.hpp) and the fixed work units of a pass.
TILE: int
SLAB_DOUBLE: int
SLAB_FLOAT: int
PASS_BLOCKS: int

def packed_prefix_size(tile_rows: int) -> int: ...
def kernel_block_elements(rows_a: int, rows_b: int, symmetric: bool) -> int: ...
def dense_operator(a: NDArray[_F]) -> Operator: ...
def kernel_operator(
    x: NDArray[_F],
    kernel: _Kernel,
    gamma: float,
    degree: float,
    coef0: float,
    cached_tile_rows: int,
    n_threads: int,
) -> Operator: ...
def python_operator(
    matmat: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    n: int,
    storage: str = "python",
    trace: float | None = None,
    kernel_entries: float = 0.0,
    bytes_read: float = 0.0,
    row_sums: Callable[[], NDArray[np.float64]] | None = None,
) -> Operator: ...
def eigsh(
    op: Operator,
    v0: NDArray[np.float64],
    k: int,
    tol: float,
    max_basis: int,
    max_passes: int,
    seed: int,
    dense: bool,
    progress: Callable[[int, int, float], None] | None,
    n_threads: int,
    products: _Products = "float64",
) -> dict[str, object]: ...
def kernel_block_tiles(
    a: NDArray[_F], b: NDArray[_F] | None, kernel: _Kernel, gamma: float, degree: float, coef0: float, n_threads: int
) -> NDArray[_F]: ...
def kernel_block_product(
    a: NDArray[_F],
    b: NDArray[_F] | None,
    kernel: _Kernel,
    gamma: float,
    degree: float,
    coef0: float,
    kept: NDArray[_F] | None,
    va: NDArray[np.float64],
    vb: NDArray[np.float64] | None,
    blocks: int,
    n_threads: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]: ...
