"""The input checks of the public API, in one place (kernel names and parameters are the registry's:
kernels/registry.py).

The native core assumes what these functions establish: 2-D, C-contiguous, aligned float32/float64 arrays
with finite values, sane parameters, and outputs that fit in memory. The core itself only checks
invariants (and shapes at its boundary).
"""

from __future__ import annotations

import functools
import math
import numbers
import os

import numpy as np


def is_sparse(x) -> bool:
    return hasattr(x, "tocsr") and hasattr(x, "nnz")


def as_float_array(x, name: str, dtype=None) -> np.ndarray:
    """A 2-D float array view or copy of ``x`` (lists, DataFrames, sparse matrices accepted).

    ints and bools become float64, float16 becomes float32; complex, object and string data raise
    TypeError. ``dtype`` forces float32/float64. No copy is made if ``x`` already fits.
    """
    if x is None:
        raise TypeError(f"{name} must be an array, got None")
    if is_sparse(x):
        # fastkpca's kernels are dense: densify once, after checking it fits.
        check_memory(int(np.prod(x.shape, dtype=np.float64)) * 8, f"densifying the sparse {name}")
        x = x.toarray()
    if hasattr(x, "dtypes") and hasattr(x, "to_numpy"):  # pandas DataFrame
        kinds = {np.dtype(t).kind if isinstance(t, np.dtype) else "O" for t in x.dtypes}
        if kinds - set("biuf"):
            raise TypeError(f"{name} has non-numeric columns ({', '.join(map(str, x.dtypes.unique()))})")
        x = x.to_numpy()
    arr = np.asarray(x)
    kind = arr.dtype.kind
    if kind == "c":
        raise TypeError(f"{name} is complex ({arr.dtype}); fastkpca works on real data")
    if kind == "O":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name} has dtype object and is not numeric") from None
        kind = "f"
    if kind in "USVMm":
        raise TypeError(f"{name} has dtype {arr.dtype}; expected numbers")
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (samples × features), got {arr.ndim}-D with shape {arr.shape}"
            + ("; reshape a single feature with x.reshape(-1, 1) or a single sample with x.reshape(1, -1)"
               if arr.ndim == 1 else "")
        )
    if dtype is None:
        dtype = np.float32 if arr.dtype in (np.float32, np.float16) else np.float64
    return arr.astype(dtype, copy=False)


def check_finite(arr: np.ndarray, name: str) -> None:
    if not np.isfinite(arr).all():
        what = "NaN" if np.isnan(arr).any() else "infinity"
        raise ValueError(f"{name} contains {what}; fastkpca needs finite values")


def check_samples(x, name: str, dtype=None) -> np.ndarray:
    """Data matrix: 2-D, at least one sample and one feature, finite, C-contiguous float32/float64."""
    arr = as_float_array(x, name, dtype)
    if arr.shape[0] == 0:
        raise ValueError(f"{name} has 0 samples (shape {arr.shape}); at least 1 is required")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has 0 features (shape {arr.shape}); at least 1 is required")
    check_finite(arr, name)
    return contiguous(arr)


def contiguous(arr: np.ndarray) -> np.ndarray:
    """``arr`` C-contiguous and aligned, copied only if it is not. The native core reads arrays through
    Eigen maps and SIMD loads that need elements at multiples of their size; a view of a byte buffer at an
    odd offset (``np.frombuffer(buf, offset=1)``) is contiguous but not aligned."""
    return np.require(arr, requirements=("C", "A"))


def check_in_place(arr: np.ndarray, name: str) -> None:
    """An array the core will overwrite or keep reading in place must be aligned (see :func:`contiguous`);
    a copy would not be the caller's array."""
    if not arr.flags.aligned:
        raise ValueError(f"{name} is not aligned (its data starts at an address that is not a multiple of "
                         f"{arr.dtype.itemsize} bytes), so it cannot be used in place; pass copy=True or an "
                         "aligned copy (numpy.require(a, requirements='A'))")


def check_sparse_samples(x, name: str, dtype=None):
    """Sparse samples as the native core reads them: a canonical CSR matrix (indices sorted within each row, no
    duplicate entries: a row's norm must be the norm of its values) of float32/float64 values (integers and
    booleans become float64, float16 float32), finite, with at least one sample and one feature. The caller's
    matrix is never changed: a copy is made only when it is not already so."""
    from scipy import sparse

    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D sparse matrix (samples × features), got shape {x.shape}")
    kind = x.dtype.kind
    if kind == "c":
        raise TypeError(f"{name} is complex ({x.dtype}); fastkpca works on real data")
    if kind not in "biuf":
        raise TypeError(f"{name} has dtype {x.dtype}; expected numbers")
    if dtype is None:
        dtype = np.float32 if x.dtype in (np.float32, np.float16) else np.float64
    csr = x if getattr(x, "format", None) == "csr" else sparse.csr_matrix(x)
    if csr.dtype != dtype:
        csr = csr.astype(dtype)
    if not csr.has_canonical_format:
        csr = csr.copy() if csr is x else csr
        csr.sum_duplicates()  # sorts the indices too
    if csr.shape[0] == 0:
        raise ValueError(f"{name} has 0 samples (shape {csr.shape}); at least 1 is required")
    if csr.shape[1] == 0:
        raise ValueError(f"{name} has 0 features (shape {csr.shape}); at least 1 is required")
    if csr.shape[1] >= 2**31:
        raise ValueError(f"{name} has {csr.shape[1]} features; fastkpca's sparse kernels take fewer than 2**31")
    check_finite(csr.data, name)
    return csr


def check_targets(y, n: int) -> np.ndarray:
    """Regression targets as a float64 array of their own shape, (n,) or (n, t) with t >= 1: numeric,
    finite, n rows (the checks scikit-learn's validate_data makes on the NumPy path)."""
    if y is None:
        raise ValueError("y must be given: KernelRidge needs targets")
    arr = np.asarray(y)
    if arr.dtype.kind == "O":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError("y has dtype object and is not numeric") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"y has dtype {arr.dtype}; expected numbers")
    if arr.ndim not in (1, 2):
        raise ValueError(f"y must be 1-D or 2-D (samples × targets), got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"X has {n} samples but y has {arr.shape[0]}: they must have the same length")
    if arr.ndim == 2 and arr.shape[1] == 0:
        raise ValueError(f"y has 0 targets (shape {arr.shape}); at least 1 is required")
    Y = arr.astype(np.float64)
    check_finite(Y, "y")
    return Y


def check_landmarks(points, n_features: int, dtype) -> np.ndarray:
    """User-given landmarks: samples of X's width (a copy in X's dtype where needed)."""
    S = check_samples(points, "landmarks", dtype)
    if S.shape[1] != n_features:
        raise ValueError(f"landmarks has {S.shape[1]} features, but X has {n_features}")
    return S


def _rows(a):
    """Rows of an array-like, or None when it has no length (the later checks then report it)."""
    shape = getattr(a, "shape", None)
    if shape is not None:
        return shape[0] if len(shape) else None
    try:
        return len(a)
    except TypeError:
        return None


def check_same_length(X, y) -> None:
    """X and y describe the same samples."""
    n_x, n_y = (None, None) if X is None or y is None else (_rows(X), _rows(y))
    if n_x is not None and n_y is not None and n_x != n_y:
        raise ValueError(f"X has {n_x} samples but y has {n_y}: they must have the same length")


def check_alphas(alpha, n_targets: int) -> np.ndarray:
    """A ridge alpha as one float per target: finite, >= 0, one for all targets or one per target."""
    if isinstance(alpha, (str, bytes)) or alpha is None:
        raise TypeError(f"alpha must be a number or an array of numbers, got {alpha!r}")
    try:
        values = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    except (TypeError, ValueError):
        raise TypeError(f"alpha must be a number or an array of numbers, got {alpha!r}") from None
    if values.ndim != 1:
        raise ValueError(f"alpha must be a scalar or 1-D, got shape {values.shape}")
    if not np.isfinite(values).all() or (values < 0).any():
        raise ValueError(f"alpha must be finite and >= 0, got {alpha!r}")
    if values.shape[0] not in (1, n_targets):
        raise ValueError(f"alpha has {values.shape[0]} values but y has {n_targets} targets: give one alpha, "
                         "or one per target")
    return np.broadcast_to(values, (n_targets,)).copy()


def check_sample_weight(sample_weight, n: int) -> np.ndarray:
    """Sample weights as a float64 array (n,): a number for every sample, or one per sample; finite. The library's
    own: scikit-learn's (``_check_sample_weight``) is private and wants X."""
    if isinstance(sample_weight, numbers.Real) and not isinstance(sample_weight, bool):
        w = np.full(n, float(sample_weight))
    else:
        w = np.asarray(sample_weight)
        if w.dtype.kind not in "biuf":
            raise TypeError(f"sample_weight must be numeric, got dtype {w.dtype}")
        if w.ndim != 1 or w.shape[0] != n:
            raise ValueError(f"sample_weight must have shape ({n},), got {w.shape}")
        w = w.astype(np.float64)
    if not np.isfinite(w).all():
        raise ValueError("sample_weight contains NaN or infinity")
    return w


def nonnegative_weights(sample_weight, n: int) -> np.ndarray:
    """Sample weights w (n,) as float64 (a number or one per sample; finite, >= 0, not all zero); ones for None."""
    if sample_weight is None:
        return np.ones(n)
    w = check_sample_weight(sample_weight, n)
    if (w < 0).any():
        raise ValueError("sample_weight must be >= 0")
    if not (w > 0).any():
        raise ValueError("sample_weight must contain at least one non-zero weight")
    return w


def sample_weight_root(sample_weight, n: int):
    """√w (n,) for sample weights w (a number or one per sample; finite, >= 0, not all zero), or None."""
    return None if sample_weight is None else np.sqrt(nonnegative_weights(sample_weight, n))


def common_dtype(*arrays) -> type:
    """float32 only if every array is float32 (or float16), float64 otherwise."""
    kinds = [a.dtype if is_sparse(a) else np.asarray(a).dtype for a in arrays if a is not None]
    return np.float32 if all(k in (np.float32, np.float16) for k in kinds) else np.float64


def check_square(arr: np.ndarray, name: str) -> None:
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")


def check_choice(value, name: str, choices) -> str:
    """One of a fixed set of strings: TypeError for a non-string, ValueError for another string."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def check_real(value, name: str, *, minimum=None, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_int(value, name: str, *, minimum=None, maximum=None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


@functools.lru_cache(maxsize=1)
def cpu_count() -> int:
    """The CPUs this process may use: joblib's count (the affinity mask, a cgroup's CPU quota, LOKY_MAX_CPU_COUNT),
    as scikit-learn's n_jobs=-1 counts them; read once per process (it reads the cgroup's files: 0.1 ms)."""
    from joblib import cpu_count as joblib_cpu_count

    return max(1, int(joblib_cpu_count()))


def n_threads(n_jobs) -> int:
    """OpenMP thread count for the core: 0 keeps OpenMP's default (OMP_NUM_THREADS, threadpoolctl)."""
    if n_jobs is None:
        return 0
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral):
        raise TypeError(f"n_jobs must be None or a non-zero integer, got {n_jobs!r}")
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ValueError("n_jobs must be None or a non-zero integer, got 0")
    if n_jobs < 0:  # joblib's convention: -1 all cores, -2 all but one, ...
        return max(1, cpu_count() + 1 + n_jobs)
    return n_jobs


def _read_file(path: str) -> bytes | None:
    """A small file's bytes (raw reads: a text file object costs several times as much), None if unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 8192)
    except OSError:
        return None
    finally:
        os.close(fd)


#: The cgroup's memory limit and usage files, v2's then v1's (the container's own where it runs in one).
_CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                 ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"))
#: A cgroup limit from this many bytes is no limit (cgroup v1 writes "no limit" as about 2**63).
_NO_CGROUP_LIMIT = 2**60


@functools.lru_cache(maxsize=1)
def _cgroup_files() -> tuple[str, str] | None:
    """The (limit, usage) files of this process's cgroup, found once: the first pair that exists."""
    return next((pair for pair in _CGROUP_FILES if os.path.exists(pair[0]) and os.path.exists(pair[1])), None)


#: The share of the available memory from which the large buffers the core is still freeing in the background
#: (cpp/include/fastkpca/background_release.hpp) are waited for before the memory is read (:func:`available_memory`).
RELEASE_WAIT_SHARE = 0.1


def available_memory() -> int:
    """Bytes this process can still allocate: MemAvailable, capped by a cgroup limit if one is set (about 20 µs).
    The library's own: psutil's ``virtual_memory().available`` reads the same MemAvailable but no cgroup limit
    (a container's), and psutil is not a dependency.

    The large buffers the core is still freeing in the background (a finished fit's stored kernel or column cache)
    are first waited for where their bytes exceed RELEASE_WAIT_SHARE of the memory read without them, so that a
    plan which needs them sees them as available. A smaller share is read as taken: the plan is at most that share
    short, and the next fit does not wait for their unmapping (about 0.3 µs a page: 8 ms of a 90 ms KernelPCA fit
    at 5,000 samples, fitted back to back). The spare buffer the core keeps for the next fit
    (cpp/include/fastkpca/spare_buffer.hpp) is read as taken too (only a large buffer of about its size can use it);
    :func:`check_memory` gives it back where an allocation would not fit without it."""
    from ._native import core

    in_flight = core.release_bytes_in_flight()
    avail = _memory_now()
    if in_flight > RELEASE_WAIT_SHARE * avail:
        core.wait_for_releases()
        avail = _memory_now()
    return avail


def _memory_now() -> int:
    """MemAvailable, capped by a cgroup limit if one is set, as it reads now."""
    avail = None
    meminfo = _read_file("/proc/meminfo")
    if meminfo is not None:
        at = meminfo.find(b"MemAvailable:")
        if at >= 0:
            try:
                avail = int(meminfo[at + 13:meminfo.index(b"kB", at)]) * 1024
            except ValueError:
                avail = None
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):  # pragma: no cover
            return 1 << 62
    files = _cgroup_files()
    if files is not None:
        limit, usage = _read_file(files[0]), None
        if limit is not None and limit.strip().isdigit() and int(limit) < _NO_CGROUP_LIMIT:
            usage = _read_file(files[1])
        if limit is not None and usage is not None and usage.strip().isdigit():
            avail = min(avail, max(0, int(limit) - int(usage)))
    return avail


#: Share of the available memory a fit may plan for when no memory_limit is given: the rest is left to
#: the interpreter, the caller's arrays and other processes.
DEFAULT_MEMORY_FRACTION = 0.8
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def memory_limit(value, name: str = "memory_limit") -> int:
    """Bytes from ``value``: None (a safe fraction of the available memory), a number of bytes, or a string
    such as "4GB", "512 MiB" or "1.5e9"."""
    if value is None:
        return int(DEFAULT_MEMORY_FRACTION * available_memory())
    if isinstance(value, str):
        import re

        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*", value)
        if not match or match.group(2).lower() not in _UNITS:
            raise ValueError(f"{name} must be a number of bytes or a size such as '4GB' or '512MiB', got {value!r}")
        nbytes = float(match.group(1)) * _UNITS[match.group(2).lower()]
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        nbytes = float(value)
    else:
        raise TypeError(f"{name} must be None, a number of bytes or a string such as '4GB', got {value!r}")
    if not math.isfinite(nbytes) or nbytes <= 0:
        raise ValueError(f"{name} must be a positive size, got {value!r}")
    return int(nbytes)


#: Allocations below this many bytes are not checked against the memory available: the probe
#: (:func:`available_memory`) would cost more than such an allocation, and one this small that the machine cannot
#: give is no question a memory limit answers. They are still checked against a fit's memory limit.
SMALL_ALLOCATION_BYTES = 16 * 2**20


def check_memory(nbytes: int, what: str) -> None:
    """Raise MemoryError, before allocating, if ``nbytes`` cannot fit in the memory available (allocations below
    SMALL_ALLOCATION_BYTES pass unprobed). Where it does not fit while the core holds a spare buffer, the spare goes
    back to the system first (and its release is waited for) and the memory is read again."""
    if nbytes < SMALL_ALLOCATION_BYTES:
        return
    avail = available_memory()
    if nbytes > avail:
        from ._native import core

        if core.drop_spare():
            core.wait_for_releases()
            avail = available_memory()
    if nbytes > avail:
        raise MemoryError(
            f"{what} needs {nbytes / 2**30:.2f} GiB, but only {avail / 2**30:.2f} GiB of memory is available"
        )


def check_within(nbytes: int, limit: int, what: str, hint: str = "") -> None:
    """Raise MemoryError, before allocating, if ``what`` (``nbytes``) exceeds the memory limit or the memory
    available; ``hint`` says what fits instead."""
    if nbytes > limit:
        raise MemoryError(f"{what} needs {nbytes / 2**30:.2f} GiB, but the memory limit is {limit / 2**30:.2f} GiB"
                          + (f"; {hint}" if hint else ""))
    check_memory(nbytes, what)


def empty(shape, dtype, what: str) -> np.ndarray:
    """np.empty after a memory check."""
    nbytes = int(np.prod(shape, dtype=np.float64)) * np.dtype(dtype).itemsize
    check_memory(nbytes, what)
    return np.empty(shape, dtype=dtype)


def check_random_state(seed) -> np.random.RandomState:
    """sklearn.utils.check_random_state's three cases, the library's own so that the functions (``eigsh``, the
    low-rank factors) run without importing scikit-learn (tests/test_build.py); a TypeError names the argument."""
    if seed is None or seed is np.random:
        return np.random.mtrand._rand
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        return np.random.RandomState(int(seed))
    if isinstance(seed, np.random.RandomState):
        return seed
    raise TypeError(f"random_state must be None, an int or a numpy RandomState, got {seed!r}")


# ------------------------------------------------------------------------------- parameter constraints
# An estimator declares its parameters' constraints once, as a table {name: constraint} (scikit-learn's
# _parameter_constraints pattern), and checks them all with check_params. A constraint is a function of
# (value, name) that raises TypeError or ValueError naming the parameter.

def integer(minimum=None, maximum=None, *, none=False):
    def check(value, name):
        if value is None and none:
            return
        check_int(value, name, minimum=minimum, maximum=maximum)
    return check


def real(minimum=None, *, none=False):
    def check(value, name):
        check_real(value, name, minimum=minimum, allow_none=none)
    return check


def choice(*options, callable_ok=False, other=None, none=False):
    """One of the strings ``options``; a callable too with ``callable_ok``; None with ``none``; or anything
    ``other`` accepts (a constraint itself)."""
    def check(value, name):
        if (callable_ok and callable(value)) or (none and value is None):
            return
        if other is not None and not isinstance(value, str):
            other(value, name)
            return
        check_choice(value, name, options)
    return check


def optional_callable(value, name):
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be callable or None, got {value!r}")


def optional_dict(value, name):
    if value is not None and not isinstance(value, dict):
        raise TypeError(f"{name} must be a dict or None, got {value!r}")


def jobs(value, name):
    n_threads(value)


def flag(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")


def anything(value, name):
    """No constraint (an array of points, a random state: checked where they are used)."""


#: The default of a deprecated estimator keyword (scikit-learn's own convention): a value no user passes, so that
#: "given" means "not this".
DEPRECATED = "deprecated"


def left_deprecated(value) -> bool:
    """Whether a deprecated keyword is at its default, DEPRECATED (not given)."""
    return isinstance(value, str) and value == DEPRECATED


def check_params(estimator, constraints: dict) -> None:
    """Check every parameter of ``estimator`` named in ``constraints`` against its constraint."""
    for name, constraint in constraints.items():
        constraint(getattr(estimator, name), name)

