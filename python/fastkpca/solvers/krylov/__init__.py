"""Krylov methods on any operator: the block Lanczos top-k eigensolver and its policies (lanczos.py),
conjugate gradients for kernel systems, preconditioned, block and multi-shift (cg.py), the stochastic Lanczos
quadrature of a log determinant read from CG's own scalars (lanczos_cg.py), and scikit-learn's rules for
eigenpairs once found: the PSD check and the sign convention (eigenvalues.py)."""
