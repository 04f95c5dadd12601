# Type stubs for the native core modules fastkpca._core_{baseline,v3,v4,generic} (all share this
# interface; the build installs a copy of this file under each module's name). Private API: use the
# fastkpca package's functions instead.
from typing import Callable, Literal, TypeVar

import numpy as np
from numpy.typing import NDArray

_F = TypeVar("_F", np.float32, np.float64)

ISA: str
VERSION: str

def supported_isas() -> list[str]: ...
def build_info() -> dict[str, object]: ...
def omp_max_threads() -> int: ...
def gram_into(
    x: NDArray[_F],
    y: NDArray[_F] | None,
    kernel: Literal["linear", "poly", "rbf", "laplacian", "sigmoid", "cosine"],
    gamma: float,
    degree: float,
    coef0: float,
    out: NDArray[_F],
    n_threads: int,
) -> None: ...
def packed_size(n: int) -> int: ...
def gram_packed_into(
    x: NDArray[_F],
    kernel: Literal["linear", "poly", "rbf", "laplacian", "sigmoid", "cosine"],
    gamma: float,
    degree: float,
    coef0: float,
    out: NDArray[_F],
    n_threads: int,
) -> None: ...
def packed_means(p: NDArray[_F], n: int, n_threads: int) -> tuple[NDArray[np.float64], float, float]: ...
def double_center_inplace(
    k: NDArray[_F], input: Literal["kernel", "distances", "squared_distances"], alpha: float, n_threads: int
) -> tuple[bool, NDArray[np.float64], float]: ...
def kernel_means(k: NDArray[_F], n_threads: int) -> tuple[NDArray[np.float64], float]: ...
def center_cross_inplace(
    k: NDArray[_F], fit_col_mean: NDArray[np.float64], fit_grand_mean: float, n_threads: int
) -> None: ...
def scan_square(a: NDArray[_F], check_symmetry: bool, n_threads: int) -> tuple[bool, float, float]: ...
def eigsh(
    a: NDArray[_F],
    v0: NDArray[np.float64],
    k: int,
    tol: float,
    max_basis: int,
    max_passes: int,
    seed: int,
    centered: bool,
    dense: bool,
    progress: Callable[[int, int], None] | None,
    n_threads: int,
) -> dict[str, object]: ...
def eigsh_packed(
    p: NDArray[_F],
    n: int,
    v0: NDArray[np.float64],
    k: int,
    tol: float,
    max_basis: int,
    max_passes: int,
    seed: int,
    centered: bool,
    dense: bool,
    progress: Callable[[int, int], None] | None,
    n_threads: int,
) -> dict[str, object]: ...
