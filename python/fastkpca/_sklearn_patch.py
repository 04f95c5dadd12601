"""Backend switch: run scikit-learn's KernelPCA, Nystroem, KernelRidge, KernelCenterer, SpectralEmbedding,
SpectralClustering (and their functions), GaussianProcessRegressor, GaussianProcessClassifier, SVC, NuSVC, SVR,
NuSVR, OneClassSVM and pairwise kernels on fastkpca.

``patch_sklearn()`` rebinds the public names in scikit-learn's modules — and the copies that already
imported scikit-learn modules hold (KernelRidge's ``pairwise_kernels``, SpectralEmbedding's ``rbf_kernel``,
...) — to fastkpca's versions, so code that looks them up after patching runs on fastkpca (dense or sparse
input). Each kernel wrapper hands calls with arguments fastkpca does not serve (``dense_output=False``,
unknown keywords) to the original function. ``unpatch_sklearn()`` restores every original.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys

from .kernels import pairwise, registry

# (module, name) -> original object, for everything patch_sklearn replaced.
_originals: dict = {}
# id(fastkpca replacement) -> (replacement, original); holding the replacement keeps its id valid.
_replacements: dict = {}


def _kernel_wrapper(original, kernel: str, accepted: tuple[str, ...]):
    """A function with `original`'s signature that runs fastkpca.gram when it can."""
    signature = inspect.signature(original)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return original(*args, **kwargs)
        bound.apply_defaults()
        params = dict(bound.arguments)
        X, Y = params.pop("X"), params.pop("Y", None)
        if params.pop("dense_output", True) is not True or set(params) - set(accepted):
            return original(*args, **kwargs)
        return pairwise.gram(X, Y, kernel=kernel, **params)

    wrapper.__fastkpca_original__ = original  # type: ignore[attr-defined]
    return wrapper


def _pairwise_kernels_wrapper(original):
    @functools.wraps(original)
    def wrapper(X, Y=None, metric="linear", *, filter_params=False, n_jobs=None, **kwds):
        if not (isinstance(metric, str) and metric in pairwise._NATIVE_METRICS):
            return original(X, Y, metric=metric, filter_params=filter_params, n_jobs=n_jobs, **kwds)
        return pairwise.pairwise_kernels(X, Y, metric, filter_params=filter_params, n_jobs=n_jobs, **kwds)

    wrapper.__fastkpca_original__ = original
    return wrapper


def _replacement_table():
    """(module name, attribute) -> fastkpca object, built from scikit-learn's current originals."""
    import importlib

    import sklearn.manifold._spectral_embedding as ske
    import sklearn.metrics.pairwise as skp

    from . import estimators

    # each estimator or function under the name it replaces in its scikit-learn module (estimators._MODULES)
    table = {(module, name): getattr(estimators, name) for name, (_, module) in estimators._MODULES.items()
             if module is not None and hasattr(importlib.import_module(module), name)}
    if hasattr(ske, "_spectral_embedding"):  # what scikit-learn's own SpectralClustering calls (>= 1.3)
        table[("sklearn.manifold._spectral_embedding", "_spectral_embedding")] = estimators.spectral_embedding
    # scikit-learn's function for each kernel of the registry: <name>_kernel for the name or an alias
    # (rbf_kernel, polynomial_kernel, ...), except cosine's, which scikit-learn calls cosine_similarity.
    for spec in registry.KERNELS.values():
        names = (["cosine_similarity"] if spec.name == "cosine"
                 else [f"{n}_kernel" for n in (spec.name, *spec.aliases)])
        for name in names:
            if hasattr(skp, name):
                table[("sklearn.metrics.pairwise", name)] = _kernel_wrapper(getattr(skp, name), spec.name,
                                                                            spec.parameters)
    table[("sklearn.metrics.pairwise", "pairwise_kernels")] = _pairwise_kernels_wrapper(skp.pairwise_kernels)
    return table


def _sklearn_modules():
    return [m for name, m in list(sys.modules.items())
            if m is not None and (name == "sklearn" or name.startswith("sklearn."))]


def patch_sklearn() -> None:
    """Make scikit-learn's KernelPCA, Nystroem, KernelRidge, KernelCenterer and pairwise kernels run on fastkpca.

    Replaces ``sklearn.decomposition.KernelPCA``, ``sklearn.kernel_approximation.Nystroem``,
    ``sklearn.kernel_ridge.KernelRidge``,
    ``sklearn.preprocessing.KernelCenterer``, ``sklearn.manifold.SpectralEmbedding`` and
    ``spectral_embedding`` (also where scikit-learn's own SpectralClustering calls it),
    ``sklearn.cluster.SpectralClustering`` and ``spectral_clustering``,
    ``sklearn.gaussian_process.GaussianProcessRegressor`` and ``GaussianProcessClassifier``,
    ``sklearn.svm.SVC``, ``NuSVC``, ``SVR``, ``NuSVR`` and ``OneClassSVM`` and, in
    ``sklearn.metrics.pairwise``, ``rbf_kernel``, ``laplacian_kernel``, ``polynomial_kernel``,
    ``linear_kernel``, ``sigmoid_kernel``, ``cosine_similarity`` and ``pairwise_kernels`` (for the metrics
    fastkpca serves), everywhere scikit-learn's modules hold them. Calling it twice is harmless.

    Examples
    --------
    >>> import fastkpca
    >>> fastkpca.patch_sklearn()
    >>> from sklearn.decomposition import KernelPCA
    >>> KernelPCA.__module__
    'fastkpca.estimators.decomposition'
    >>> fastkpca.unpatch_sklearn()
    """
    if _originals:
        return
    table = _replacement_table()
    by_original = {}
    for (module_name, attr), new in table.items():
        module = sys.modules[module_name]
        old = getattr(module, attr)
        by_original[id(old)] = (old, new)
    for module in _sklearn_modules():
        for attr, value in list(vars(module).items()):
            hit = by_original.get(id(value))
            if hit is not None and hit[0] is value:
                _originals[(module.__name__, attr)] = value
                _replacements[id(hit[1])] = (hit[1], value)
                setattr(module, attr, hit[1])


def unpatch_sklearn() -> None:
    """Restore every scikit-learn object that :func:`patch_sklearn` replaced."""
    if not _originals:
        return
    # Modules imported while patched may hold replacements too: restore them as well.
    for module in _sklearn_modules():
        for attr, value in list(vars(module).items()):
            hit = _replacements.get(id(value))
            if hit is not None and hit[0] is value:
                setattr(module, attr, hit[1])
    for (module_name, attr), original in _originals.items():
        module = sys.modules.get(module_name)
        if module is not None:
            setattr(module, attr, original)
    _originals.clear()
    _replacements.clear()


def is_patched() -> bool:
    """Whether :func:`patch_sklearn` is in effect."""
    return bool(_originals)


@contextlib.contextmanager
def sklearn_patched():
    """Context manager: scikit-learn runs on fastkpca inside the ``with`` block.

    Examples
    --------
    >>> import fastkpca
    >>> with fastkpca.sklearn_patched():
    ...     from sklearn.metrics.pairwise import rbf_kernel
    """
    already = is_patched()
    patch_sklearn()
    try:
        yield
    finally:
        if not already:
            unpatch_sklearn()
