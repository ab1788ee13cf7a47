"""Human label votes joined to the splits they describe (:func:`label_columns`: from the study's
verified file where every given label equals the split's, or a build's side files; every split of
an annotated dataset gets the columns, -1 where not examined), and the cleaned views of
``load(..., label_issues=...)`` (:func:`apply_label_issues`).  See ``docs/label-errors.md``.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..cache.download import fetch_file
from ..cache.verify import verify_file
from ..errors import ConfigError, DownloadError, IntegrityError, PathArg
from ..gate.source import locate, resolve
from ..io.idx import read_idx
from ..io.label_votes import (FIELDS, MISSING, LabelVotes, dense_columns, given_mismatches, read_mturk_json,
                              table_to_columns)
from ..registry import DatasetInfo, LabelAnnotation, get_dataset, get_file, label_annotations
from .split import DatasetSplit, LabelIssueView

if TYPE_CHECKING:
    import numpy.typing as npt

    #: label-vote columns by name (:data:`~mnistforge.io.label_votes.FIELDS`)
    Columns = dict[str, npt.NDArray[Any]]

logger = logging.getLogger(__name__)

__all__ = ["MODES", "LabelIssueView", "study_path", "read_study", "label_columns", "add_label_votes",
           "clean_view", "check_mode", "join_columns", "apply_label_issues", "split_offset", "study_votes"]

#: Values of ``load(..., label_issues=...)`` besides ``None`` (the data as published).
MODES = ("exclude", "relabel")


def study_path(ann: LabelAnnotation, *, cache: PathArg | None = None, download: bool | None = None,
               progress: bool | None = None) -> Path:
    """The study's file in the cache, fetched and verified like any dataset file."""
    # None lets fetch read MNISTFORGE_OFFLINE itself, so its error names the switch really used
    offline = None if download is None else not download
    return fetch_file(ann.file, root=cache, offline=offline, progress=progress).path


def read_study(path: PathArg, file_id: str = "label-errors/mnist_mturk.json") -> LabelVotes:
    """Verify ``path`` against the registry's sha256 of ``file_id`` (HashMismatchError), then parse it.

    >>> p = Path("../shared/reference/papers/northcutt2021-mnist-test-mturk.json")
    >>> len(read_study(p)) if p.is_file() else 100
    100
    """
    remote = get_file(file_id)
    verify_file(path, remote, use_marker=False)
    return read_mturk_json(path)


def split_offset(info: DatasetInfo, split: str) -> tuple[LabelAnnotation, int] | None:
    """``(annotation, first row in its file split)`` of an annotated split (``test50k``: 10000), or None."""
    sp = info.split(split)
    fsp = info.file_split(split)
    for ann in label_annotations(info.name):
        if ann.split == fsp.name:
            start = sp.rows[0] if sp.is_view and sp.rows is not None else 0
            return ann, int(start)
    return None


def _missing(n: int) -> Columns:
    cols = {f: np.full(n, MISSING, dtype=np.int32) for f in FIELDS[:4]}
    cols["label_issue"] = np.zeros(n, dtype=bool)
    return cols


def _folder_columns(info: DatasetInfo, split: str, n: int, root: PathArg) -> Columns | None:
    """The columns of a build's side files (``t10k-label-votes-idx2-int.gz``...), or None."""
    if (folder := resolve(root, info).folder) is None:
        return None
    if (hit := split_offset(info, split)) is not None:
        ann, start = hit
        if (p := locate(folder, ann.side_file)) is None:
            return None
        cols = table_to_columns(np.asarray(read_idx(p)), str(p))
        if len(cols["label_issue"]) < start + n:
            raise IntegrityError("label-vote side file does not match the split", path=Path(folder) / ann.side_file,
                                 expected=f"at least {start + n} rows", found=str(len(cols["label_issue"])))
        return {f: c[start:start + n] for f, c in cols.items()}
    # another split of a build that has votes: the same columns, nothing examined
    anns = label_annotations(info.name)
    return _missing(n) if any(locate(Path(folder), a.side_file) for a in anns) else None


def label_columns(ds: DatasetSplit, *, root: PathArg | None = None, cache: PathArg | None = None,
                  download: bool | None = None, progress: bool | None = None, required: bool = False) -> Columns | None:
    """The label-vote columns of a loaded (whole) split, or None where none apply: from the
    study's file (fetched as ``download`` allows; ``required``: raise when it cannot be had)
    for official files, from its build's side files for a folder (``root``)."""
    info = ds.info
    if not (anns := label_annotations(info.name)):
        return None
    n = len(ds.labels)
    if root is not None:
        return _folder_columns(info, ds.split, n, root)
    try:
        votes = {a.file: read_study(study_path(a, cache=cache, download=download,
                                               progress=progress), a.file) for a in anns}
    except DownloadError as e:  # offline and not cached, or no mirror answered
        if required:
            raise
        logger.warning("label votes left out: %s", e)
        return None
    if (hit := split_offset(info, ds.split)) is None:
        return _missing(n)
    ann, start = hit
    v = votes[ann.file]
    offset = ann.offset - start
    if bad := given_mismatches(v, ds.labels, offset):
        raise IntegrityError(f"{info.name} {ds.split}: the study's given labels disagree with "
                             "the verified labels", path=ann.file, expected="every given label equal to the split's",
                             found=f"{bad} differ", hint="the registry's annotation entry is wrong")
    ds.status[get_file(ann.file).name] = "exact"
    return dense_columns(v, n, offset, ann.min_given)


def add_label_votes(ds: DatasetSplit, **kw: Any) -> DatasetSplit:
    """``ds`` with the label-vote columns appended to its metadata (see :func:`label_columns`)."""
    if (cols := label_columns(ds, **kw)) is not None:
        ds.metadata = join_columns(ds.metadata, cols)
    return ds


def clean_view(ds: DatasetSplit, mode: str, keep_metadata: bool) -> DatasetSplit:
    """Apply ``load(..., label_issues=mode)`` to ``ds`` in place; drop the metadata unless kept."""
    images, labels, meta, view = apply_label_issues(mode, ds.name, ds.split, ds.images, ds.labels, ds.metadata)
    keep = np.ones(len(ds), dtype=bool)
    keep[view.dropped] = False
    ds.indices = np.flatnonzero(keep) if ds.indices is None else ds.indices[keep]
    if ds.row_map is not None:  # a copy's map follows its rows
        ds.row_map = ds.row_map.select(keep)
    ds.images, ds.labels, ds.label_issues = images, labels, view
    ds.metadata = meta if keep_metadata else None
    return ds


def join_columns(metadata: npt.NDArray[np.void] | None, cols: Columns) -> npt.NDArray[np.void]:
    """``metadata`` (a structured array or None) with the label-vote columns appended."""
    n = len(cols["label_issue"])
    base = [] if metadata is None else [(f, metadata.dtype[f]) for f in metadata.dtype.names or ()]
    dt = np.dtype(base + [(f, cols[f].dtype) for f in FIELDS])
    out = np.empty(n, dtype=dt)
    for f, _ in base:
        out[f] = metadata[f]  # type: ignore[index]
    for f in FIELDS:
        out[f] = cols[f]
    return out


def check_mode(mode: str | None) -> None:
    """Raise ConfigError unless ``mode`` is None or one of :data:`MODES`."""
    if mode is not None and mode not in MODES:
        raise ConfigError("invalid label_issues", expected="None, " + ", ".join(map(repr, MODES)), found=repr(mode))


def apply_label_issues(mode: str, name: str, split: str, images: npt.NDArray[np.uint8], labels: npt.ArrayLike,
                       metadata: npt.NDArray[np.void] | None, study: str = "label-errors",
                       ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.void], LabelIssueView]:
    """``(images, labels, metadata, view)`` after ``mode``: ``exclude`` drops the rows with a label
    issue, ``relabel`` gives them the label a majority chose and drops those without one.
    ``metadata`` must hold the label-vote columns; rows not examined are kept.

    >>> from mnistforge.io.label_votes import parse_mturk_json, dense_columns
    >>> t = parse_mturk_json('[{"id": 0, "given_original_label": 1, "our_guessed_label": 7,'
    ...     ' "mturk": {"given": 0, "guessed": 5, "neither": 0}}, {"id": 1,'
    ...     ' "given_original_label": 4, "our_guessed_label": 9, "mturk": {"given": 2,'
    ...     ' "guessed": 2, "neither": 1}}]')
    >>> meta = join_columns(None, dense_columns(t, 3))
    >>> imgs, y = np.zeros((3, 2, 2), np.uint8), np.array([1, 4, 5])
    >>> apply_label_issues("exclude", "toy", "test", imgs, y, meta)[1].tolist()
    [5]
    >>> _, y2, _, view = apply_label_issues("relabel", "toy", "test", imgs, y, meta)
    >>> y2.tolist(), view.dropped, view.relabelled
    ([7, 5], [1], {0: (1, 7)})
    """
    check_mode(mode)
    if metadata is None or "label_issue" not in (metadata.dtype.names or ()):
        raise ConfigError(f"label_issues={mode!r}: {name} {split} has no label votes",
                          expected="a split the study examined (mnist test; qmnist test, test10k)",
                          found=f"{name} {split}")
    issue = np.asarray(metadata["label_issue"], dtype=bool)
    examined = np.asarray(metadata["label_votes_given"]) != MISSING
    if not examined.any():
        raise ConfigError(f"label_issues={mode!r}: the study examined no image of {name} {split}",
                          expected="mnist test; qmnist test or test10k", found=f"{name} {split}")
    labels = np.asarray(labels)
    view = LabelIssueView(mode, study)
    if mode == "exclude":
        drop = issue
    else:
        sug = np.asarray(metadata["suggested_label"], dtype=np.int64)
        fix = issue & (sug != MISSING)
        drop = issue & (sug == MISSING)
        labels = labels.copy()
        view.relabelled = {int(i): (int(labels[i]), int(sug[i])) for i in np.flatnonzero(fix)}
        labels[fix] = sug[fix]
    view.dropped = np.flatnonzero(drop).tolist()
    keep = ~drop
    return images[keep], labels[keep], metadata[keep], view


def study_votes(name: str, split: str, *, download: bool | None = None,
                cache: PathArg | None = None) -> tuple[LabelVotes, int] | None:
    """``(votes, offset)`` of a registry split the study annotates (id ``i`` at row ``i + offset``), or None."""
    if (hit := split_offset(get_dataset(name), split)) is None:
        return None
    ann, start = hit
    return read_study(study_path(ann, cache=cache, download=download), ann.file), ann.offset - start
