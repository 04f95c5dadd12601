"""Sphinx configuration of fastkpca's documentation (built by CI with warnings as errors):

    python -m pip install ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import os
import sys
import warnings

import fastkpca

project = "fastkpca"
author = "the fastkpca developers"
copyright = "2026, the fastkpca developers"
release = fastkpca.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.doctest",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "examples/README.txt"]
templates_path = ["_templates"]
root_doc = "index"

# The API reference: one page per public name, generated from the docstrings (numpydoc format).
autosummary_generate = True
autodoc_typehints = "none"  # the numpydoc sections say the types
numpydoc_show_class_members = True
numpydoc_show_inherited_class_members = False  # scikit-learn's own mixin methods are documented there
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False
# Checks every public docstring must pass (numpydoc's validation; a failure is a warning, so an error here).
numpydoc_validation_checks = {
    "GL08",  # the object has a docstring
    "SS01",  # a summary
    "PR01",  # every parameter documented
    "PR02",  # no parameter documented that the signature lacks
    "PR03",  # parameters in the signature's order
    "PR10",  # "name : type" with a space before the colon
}
numpydoc_validation_exclude = {
    r"\.__init__$",
    r"\.set_\w+_request$",  # scikit-learn's metadata routing methods, generated
    r"\.get_metadata_routing$",
    r"\.set_output$",
    r"\.get_params$",
    r"\.set_params$",
    r"\.__sklearn_tags__$",
    r"\.__getstate__$",
    r"\.__setstate__$",
    r"^fastkpca\.KernelOperator$",  # made by kernel_operator(); its constructor is the engine's, not an interface
}
suppress_warnings = ["myst.header"]  # CHANGELOG.md is included from its second heading

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "scipy": ("https://docs.scipy.org/doc/scipy", None),
    "sklearn": ("https://scikit-learn.org/stable", None),
    "dask": ("https://docs.dask.org/en/stable", None),
}
# Intersphinx inventories are fetched from the network; where it is unreachable (this project's CI), the
# links are plain text and the build must not fail for it.
if os.environ.get("FASTKPCA_DOCS_OFFLINE", "1") == "1":
    intersphinx_mapping = {}

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "show_memory": False,
    "min_reported_time": 1,
    "matplotlib_animations": False,
    "reference_url": {"fastkpca": None},
    "doc_module": ("fastkpca",),
    "backreferences_dir": None,
}

html_theme = "pydata_sphinx_theme"
html_title = f"fastkpca {release}"
html_static_path = ["_static"]
html_css_files = ["fastkpca.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_prev_next": True,
    "navbar_align": "left",
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"index": [], "install": [], "changelog": []}
html_show_sourcelink = False

# The gallery's figures are drawn off screen.
os.environ.setdefault("MPLBACKEND", "Agg")
warnings.filterwarnings("ignore", message="Matplotlib is currently using agg")
sys.path.insert(0, os.path.abspath("."))

# Every public name has a reference page: a name of fastkpca.__all__ missing from api.rst fails the build.
_api = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "api.rst"), encoding="utf-8").read().split()
_missing = sorted(set(fastkpca.__all__) - {"__version__"} - set(_api))
if _missing:
    raise RuntimeError(f"public names without a page in docs/api.rst: {', '.join(_missing)}")
