"""Compute the registry's ``order_free_sha256`` of each split whose real files are at hand.

    .venv/bin/python tools/order_free_hashes.py ../shared/reference/mnist mnist test \\
        /usr/share/datasets/fashion-mnist fashion-mnist train,test

The hash (see :func:`mnistforge.io.hashing.order_free_sha256`) is over the
images as stored in the official idx files (not re-oriented) and their labels;
a copy in any order hashes the same.  Prints one JSON line per split.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from mnistforge.io.hashing import order_free_sha256
from mnistforge.io.idx import idx_content_sha256, read_idx
from mnistforge.loaders.origins import locate
from mnistforge.registry import get_dataset


def main(argv: list[str]) -> int:
    for folder, name, splits in zip(argv[0::3], argv[1::3], argv[2::3]):
        info = get_dataset(name)
        for split in splits.split(","):
            sp = info.split(split)
            ip, lp = locate(Path(folder), sp.images), locate(Path(folder), sp.labels)
            images, labels = np.asarray(read_idx(ip)), np.asarray(read_idx(lp))
            print(json.dumps({"dataset": name, "split": split, "images": str(ip),
                              "images_content_sha256": idx_content_sha256(images),
                              "labels_content_sha256": idx_content_sha256(labels),
                              "order_free_sha256": order_free_sha256(images, labels)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
