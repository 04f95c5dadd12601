"""Spectral embedding's family: the affinity as an operator with its degrees (affinity.py); the exact embedding,
the graph Laplacian's bottom eigenvectors as the top ones of a view of the affinity, by block Lanczos
(embedding.py), started from a k-means partition of the samples (start.py); the approximate embedding through
the Nyström factor on landmarks (nystrom.py); and the eigensolvers behind one interface that the cost model
picks from (solvers.py)."""

from __future__ import annotations
