"""Label-vote side files of a build: the study's votes next to a rebuilt MNIST/QMNIST test set.

Written only where they apply: the study's file is in the cache (a build never downloads it;
``mnistforge fetch label-errors``) and every ``given_original_label`` equals the built label at its row, i.e. the build
reproduces MNIST's test set in order (a real SD19 with the published QMNIST tables; never a synthetic SD19). The loaders
read them back as the ``label_votes_*``, ``suggested_label`` and ``label_issue`` metadata columns
(:mod:`mnistforge.loaders.label_issues`).
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np

from ..cache.download import fetch_file
from ..errors import OfflineError
from ..io.idx import write_idx
from ..io.label_votes import columns_to_table, dense_columns, given_mismatches, read_mturk_json
from ..registry import label_annotations

logger = logging.getLogger(__name__)

__all__ = ["write_label_votes"]


def write_label_votes(folder: str | os.PathLike[str], dataset: str, labels_by_split: dict[str, np.ndarray], *,
                      cache: str | os.PathLike[str] | None = None) -> list[str]:
    """Write the side files of ``dataset``'s annotated splits into ``folder`` where they apply.

    ``labels_by_split`` maps split names (``test``) to the built labels.  Returns
    one manifest note per file written (nothing when none applies).
    """
    notes = []
    for ann in label_annotations(dataset):
        if (labels := labels_by_split.get(ann.split)) is None:
            continue
        try:
            path = fetch_file(ann.file, root=cache, offline=True).path
        except OfflineError:
            logger.info("label votes of %s not written: %s is not in the cache", ann.study, ann.file)
            continue
        votes = read_mturk_json(path)
        bad = given_mismatches(votes, labels, ann.offset)
        if bad or len(labels) <= int(votes.ids.max()) + ann.offset:
            logger.info("label votes of %s not written: the built %s %s is not the test set the "
                        "study examined (%d given labels differ)", ann.study, dataset, ann.split, bad)
            continue
        cols = dense_columns(votes, len(labels), ann.offset, ann.min_given)
        write_idx(Path(folder) / ann.side_file, columns_to_table(cols))
        notes.append(f"{ann.side_file}: human label votes of {ann.study} ({len(votes)} images "
                     f"examined, {int(cols['label_issue'].sum())} label issues); every given label "
                     "equals the built label")
    return notes
