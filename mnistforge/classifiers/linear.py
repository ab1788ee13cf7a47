"""Linear classifier: the least-squares / ridge solution on one-hot targets.

This is the analytic pseudo-inverse network the EMNIST paper calls the "linear classifier": ``W = (X^T X + ridge I)^-1
X^T Y`` with a bias column, ``Y`` one-hot, and the predicted class the largest output.  ``X^T X`` and ``X^T Y`` are
accumulated in blocks of rows (float64), so memory is ``O(D^2)`` whatever the number of samples.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, cast

import numpy as np
import numpy.typing as npt
from scipy import linalg
from scipy.linalg import blas

from ..errors import ConfigError
from ..progress import progress
from .base import Classifier, as_features, check_ridge, check_xy, one_hot
from .preprocess import fit_standardizer as _fit_standardizer, standardized as _standardized

logger = logging.getLogger(__name__)


def accumulate_normal_equations(X: np.ndarray, Y: np.ndarray, block: int = 8192, bias: bool = True,
                                transform: Callable[[np.ndarray], np.ndarray] | None = None,
                                desc: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Return ``A = Z^T Z`` and ``C = Z^T Y`` (float64), ``Z = transform(X)`` (+ bias column).

    Rows are processed ``block`` at a time so ``Z`` is never held whole.  ``A`` is accumulated in place by the BLAS
    rank-k update ``dsyrk`` (half the flops of a full product, no temporary ``D x D`` matrix) in float64: a float32
    accumulation of a wide hidden layer loses the small eigenvalues the ridge is meant to keep positive.
    """
    n = X.shape[0]
    A = C = None
    for s in progress(range(0, n, block), desc=desc, unit="block", disable=None if desc else True):
        Z = as_features(X[s:s + block]) if transform is None else transform(X[s:s + block])
        if bias:
            Z = np.hstack([Z, np.ones((Z.shape[0], 1), Z.dtype)])
        Z = np.ascontiguousarray(Z, dtype=np.float64)
        if A is None:
            A = np.zeros((Z.shape[1], Z.shape[1]), order="F")
            C = np.zeros((Z.shape[1], Y.shape[1]))
        # Z.T is Fortran-ordered without a copy; upper triangle of A += Z^T Z
        A = blas.dsyrk(1.0, Z.T, beta=1.0, c=A, trans=0, lower=0, overwrite_c=1)
        C += Z.T @ Y[s:s + block]
    if A is not None:  # mirror the upper triangle, a band of columns at a time (no index arrays)
        for j0 in range(0, A.shape[0], 1024):
            j1 = min(j0 + 1024, A.shape[0])
            A[j1:, j0:j1] = A[j0:j1, j1:].T
            blk = A[j0:j1, j0:j1]
            A[j0:j1, j0:j1] = np.triu(blk) + np.triu(blk, 1).T
    # None only when X has no rows (the classifiers check that first, check_xy)
    return cast(np.ndarray, A), cast(np.ndarray, C)


def solve_ridge(A: np.ndarray, C: np.ndarray, ridge: float, penalise_last: bool = True,
                overwrite: bool = False) -> np.ndarray:
    """Solve ``(A + ridge I) W = C`` (symmetric positive definite; lstsq fallback).

    With ``penalise_last=False`` the last row/column (the bias) is not penalised.
    ``overwrite=True`` lets the solve reuse ``A``'s memory (0.8 GB at 10,000 units).
    """
    if not overwrite:
        A = A.copy()
    d = np.arange(A.shape[0] if penalise_last else A.shape[0] - 1)
    A[d, d] += ridge
    try:
        # A is symmetric: its transpose is the Fortran-ordered view LAPACK works in place on
        W: np.ndarray = linalg.solve(A.T, C, assume_a="pos", overwrite_a=True, check_finite=False)
        return W
    except (linalg.LinAlgError, ValueError) as e:
        if overwrite:  # A was factorised in place: nothing left to fall back on
            raise ConfigError("normal equations are singular", expected="a positive definite "
                              "system", found=str(e), hint="use a larger ridge") from e
        logger.warning("normal equations singular; falling back to least squares")
        W_lstsq: np.ndarray = linalg.lstsq(A, C, check_finite=False)[0]
        return W_lstsq


@dataclass
class LinearClassifier(Classifier):
    """Ridge least squares on one-hot targets (with an unpenalised bias).

    >>> X = np.array([[0., 0.], [0., 1.], [3., 0.], [3., 1.]]); y = [0, 0, 1, 1]
    >>> LinearClassifier().fit(X, y).predict(X).tolist()
    [0, 0, 1, 1]
    """

    ridge: float = 1e-3         #: added to the diagonal of ``X^T X`` (pixels scaled to [0, 1])
    block: int = 8192           #: rows processed at a time
    standardize: bool = False   #: standardise every feature first (a :class:`.preprocess.Standardizer`)

    name = "linear"

    def __post_init__(self) -> None:
        check_ridge(self.name, self.ridge)
        if isinstance(self.block, bool) or not isinstance(self.block, int) or self.block < 1:
            raise ConfigError("invalid block size", expected="block >= 1", found=self.block)

    def fit(self, X: np.ndarray, y: npt.ArrayLike) -> LinearClassifier:
        y = check_xy(X, y)
        codes = self._encode_labels(y)
        Y = one_hot(codes, len(self.classes_), np.float64)
        X = _fit_standardizer(self, X)
        A, C = accumulate_normal_equations(X, Y, self.block)
        self.coef_ = solve_ridge(A, C, self.ridge, penalise_last=False).astype(np.float32)
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        self._check_fitted()
        X = _standardized(self, X)
        out: list[np.ndarray] = []
        for s in range(0, np.asarray(X).shape[0], self.block):
            Z = as_features(X[s:s + self.block])
            out.append(Z @ self.coef_[:-1] + self.coef_[-1])
        return np.concatenate(out) if out else np.zeros((0, len(self.classes_)), np.float32)
