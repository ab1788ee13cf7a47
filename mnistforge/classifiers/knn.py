"""k-nearest neighbours (Euclidean): blocked float32 matrix products, exact neighbour order.

The ``k + SPARE`` best float32 scores of each test row are re-ranked by exact distances (integers for uint8 images,
float64 otherwise), ordered by (distance, training index); a row the float32 rounding bound cannot certify is re-ranked
against every training row within the bound. Vote ties go to the nearest neighbour's class (``tie="nearest"``) or to the
lowest label (``tie="lowest"``, scikit-learn's rule).  In full: ``docs/classifiers.md``, implementation notes.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError
from ..progress import progress
from .base import Classifier, as_features, check_xy
from .preprocess import fit_standardizer as _fit_standardizer, standardized as _standardized

logger = logging.getLogger(__name__)

TIES = ("nearest", "lowest")
#: columns per chunk in the top-m search (a power of two; small enough that m chunks are few
#: candidates, large enough that the chunk maxima are cheap to partition)
CHUNK = 256
#: candidates beyond k re-ranked exactly (more spare candidates, fewer uncertified rows)
SPARE = 3
_U32 = float(np.finfo(np.float32).eps) / 2
_PAD_SCORE = -1e30      # score of the padding columns: never a candidate


def vote(neighbour_codes: np.ndarray, k: int, n_classes: int, tie: str = "nearest") -> tuple[np.ndarray, np.ndarray]:
    """Plurality vote of the first ``k`` neighbours (nearest first) of each row.

    Returns ``(winning class codes, vote counts N x n_classes)``; ties go to the tied class appearing first in the
    neighbour list (``tie="nearest"``) or to the lowest class code (``tie="lowest"``).

    >>> codes = np.array([[2, 1, 1, 2]])
    >>> vote(codes, 4, 3)[0].tolist(), vote(codes, 4, 3, "lowest")[0].tolist()
    ([2], [1])
    """
    nb = neighbour_codes[:, :k]
    n = nb.shape[0]
    counts = np.zeros((n, n_classes), np.int32)
    rows = np.arange(n)
    for j in range(k):
        counts[rows, nb[:, j]] += 1
    if tie == "lowest":
        return counts.argmax(axis=1), counts
    if k == 1:
        return nb[:, 0].copy(), counts
    top = counts == counts.max(axis=1, keepdims=True)
    chosen = np.full(n, -1, np.int64)
    for j in range(k):
        pick = (chosen < 0) & top[rows, nb[:, j]]
        chosen[pick] = nb[pick, j]
    return chosen, counts


@dataclass
class KNNClassifier(Classifier):
    """Euclidean k-NN; ``predict_sweep`` gives every k of a list from one distance pass.

    ``standardize`` standardises every feature with the training mean and std first (the
    Fashion-MNIST benchmark runner's setting; distances are then in float64, not integers).

    >>> X = np.array([[0., 0.], [0., 1.], [5., 5.], [5., 6.]]); y = [0, 0, 1, 1]
    >>> KNNClassifier(k=1).fit(X, y).predict([[0.2, 0.1], [5.1, 5.4]]).tolist()
    [0, 1]
    """

    k: int = 1                  #: neighbours for :meth:`predict`
    memory_mb: int = 256        #: bound on the score block (test rows x training rows x 4 bytes)
    tie: str = "nearest"        #: vote ties: the nearest neighbour's class among the tied ones, or "lowest" label
    standardize: bool = False

    name = "knn"

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ConfigError("invalid k", expected="k >= 1", found=self.k)
        if self.tie not in TIES:
            raise ConfigError("invalid k-NN tie rule", expected=" or ".join(TIES), found=self.tie)

    def fit(self, X: npt.ArrayLike, y: npt.ArrayLike) -> KNNClassifier:
        y = check_xy(X, y)
        self.codes_ = self._encode_labels(y)
        X = np.asarray(_fit_standardizer(self, X))
        feats = as_features(X)
        # uint8 pixels are kept: their squared distances are exact integers
        self.train_u8_ = X.reshape(len(X), -1) if X.dtype == np.uint8 else None
        n, dim = feats.shape
        sq = np.einsum("ij,ij->i", feats, feats, dtype=np.float64)
        self.max_norm_ = float(np.sqrt(sq.max()))
        # [t, -|t|^2/2] padded to whole chunks: x'.t' is the ranking score, one product
        cols = -(-n // CHUNK) * CHUNK
        aug = np.zeros((cols, dim + 1), np.float32)
        aug[:n, :dim] = feats
        aug[:n, dim] = -0.5 * sq
        aug[n:, dim] = _PAD_SCORE
        self.train_aug_ = aug
        self.train_ = aug[:n, :dim]          # the features, a view: no second copy
        return self

    def _exact(self, q: np.ndarray, q8: np.ndarray | None, rows: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """Exact squared distances ``len(rows) x m`` from test rows to candidate indices."""
        if q8 is not None:
            assert self.train_u8_ is not None  # q8 is made only when the training rows are uint8 too
            d = q8[rows][:, None, :].astype(np.int32) - self.train_u8_[cand].astype(np.int32)
            exact_u8: np.ndarray = np.einsum("ijk,ijk->ij", d, d).astype(np.float64) / 65025.0
            return exact_u8
        d = q[rows][:, None, :].astype(np.float64) - self.train_[cand].astype(np.float64)
        exact: np.ndarray = np.einsum("ijk,ijk->ij", d, d)
        return exact

    def kneighbors(self, X: npt.ArrayLike, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Indices and squared distances of the ``k`` nearest training rows, nearest first
        (exact order: distance, then training index)."""
        self._check_fitted()
        k = self.k if k is None else int(k)
        n_train, dim = self.train_.shape
        if not 1 <= k <= n_train:
            raise ConfigError("invalid k", expected=f"1 <= k <= {n_train} (training size)", found=k)
        X = np.asarray(_standardized(self, X))
        Q = as_features(X)
        if Q.shape[1] != dim:
            raise ConfigError("test inputs differ in size from training inputs",
                              expected=f"{dim} features", found=f"{Q.shape[1]}")
        q8 = X.reshape(len(X), -1) if (X.dtype == np.uint8 and self.train_u8_ is not None) else None
        n = Q.shape[0]
        m = min(k + SPARE, n_train)
        cols = self.train_aug_.shape[0]
        nchunks = cols // CHUNK
        rows_per_block = max(1, (self.memory_mb << 20) // (4 * cols))
        idx = np.empty((n, k), np.int64)
        dist = np.empty((n, k), np.float64)
        qsq = np.einsum("ij,ij->i", Q, Q, dtype=np.float64)
        # rigorous bound on |float32 distance - exact distance|: gamma_n times the sum of
        # |terms| (at most |x||t| + |t|^2 / 2) for the product, doubled into distance
        # units, plus a few roundings of the norms and of uint8 / 255 into float32
        gamma = (dim + 1) * _U32 / (1 - (dim + 1) * _U32)
        T = self.max_norm_
        qn = np.sqrt(qsq)
        bound = 2 * gamma * (qn * T + T * T) + 8 * _U32 * (qsq + qn * T + T * T)
        uncertified = 0

        aug_t = self.train_aug_.T
        for s in progress(range(0, n, rows_per_block), desc="k-NN", unit="block"):
            e = min(n, s + rows_per_block)
            r = e - s
            qa = np.empty((r, dim + 1), np.float32)
            qa[:, :dim] = Q[s:e]
            qa[:, dim] = 1.0
            score = qa @ aug_t                 # the one big product; BLAS threads it
            if 4 * m < nchunks:
                cmax = score.reshape(r, nchunks, CHUNK).max(axis=2)
                top = np.argpartition(-cmax, m - 1, axis=1)[:, :m]
                cidx = (top[:, :, None] * CHUNK + np.arange(CHUNK)).reshape(r, -1)
                cs = np.take_along_axis(score, cidx, axis=1)
            else:
                # large k: the m best chunks would be much of the block; partition it whole
                cidx = np.broadcast_to(np.arange(cols), (r, cols))
                cs = score
            sel = np.argpartition(-cs, m - 1, axis=1)[:, :m] if m < cs.shape[1] else \
                np.broadcast_to(np.arange(cs.shape[1]), cs.shape)
            cand = np.take_along_axis(cidx, sel, axis=1)            # m candidates per row
            approx = np.take_along_axis(cs, sel, axis=1).astype(np.float64)
            rows = np.arange(s, e)
            ex = self._exact(Q, q8, rows, cand)
            order = np.lexsort((cand, ex), axis=1)
            cand = np.take_along_axis(cand, order, axis=1)
            ex = np.take_along_axis(ex, order, axis=1)
            idx[s:e] = cand[:, :k]
            dist[s:e] = ex[:, :k]
            if m < n_train:
                # every non-candidate has a score at most the worst candidate's, so an exact
                # distance at least qsq - 2 * min(approx) - bound
                floor = qsq[s:e] - 2.0 * approx.min(axis=1) - bound[s:e]
                bad = np.flatnonzero(ex[:, k - 1] >= floor)
                uncertified += bad.size
                for i in bad:
                    # every row that can be among the k nearest has a score at least this
                    # (its exact distance is at most the k-th candidate's)
                    thr = 0.5 * (qsq[s + i] - ex[i, k - 1] - bound[s + i])
                    c = np.flatnonzero(score[i, :n_train] >= thr)
                    ec = self._exact(Q, q8, np.array([s + i]), c[None])[0]
                    o = np.lexsort((c, ec))[:k]
                    idx[s + i], dist[s + i] = c[o], ec[o]
        if uncertified:
            logger.debug("k-NN: %d of %d rows re-ranked beyond the candidates", uncertified, n)
        self.uncertified_ = uncertified
        return idx, dist

    def predict_sweep(self, X: npt.ArrayLike, ks: Iterable[int]) -> dict[int, np.ndarray]:
        """Predictions for every ``k`` in ``ks`` from one distance pass.

        >>> X = np.array([[0.], [1.], [2.], [10.]]); y = [0, 0, 1, 1]
        >>> clf = KNNClassifier().fit(X, y)
        >>> {k: p.tolist() for k, p in clf.predict_sweep([[2.2]], [1, 3]).items()}
        {1: [1], 3: [0]}
        """
        ks = sorted({int(k) for k in ks})
        if not ks or ks[0] < 1:
            raise ConfigError("invalid k sweep", expected="positive integers", found=ks)
        idx, _ = self.kneighbors(X, ks[-1])
        codes = self.codes_[idx]
        return {k: self.classes_[vote(codes, k, len(self.classes_), self.tie)[0]] for k in ks}

    def predict(self, X: npt.ArrayLike) -> np.ndarray:
        return self.predict_sweep(X, [self.k])[self.k]

    def decision_function(self, X: npt.ArrayLike) -> np.ndarray:
        """Vote fractions ``N x n_classes`` among the ``k`` nearest neighbours."""
        idx, _ = self.kneighbors(X, self.k)
        _, counts = vote(self.codes_[idx], self.k, len(self.classes_), self.tie)
        return counts / np.float32(self.k)
