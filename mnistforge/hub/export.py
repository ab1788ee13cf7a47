"""Export datasets as a Hub dataset repository folder (parquet shards + card + Croissant)."""
from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, require
from ..io.atomic import atomic_dir, atomic_file
from ..io.outputs import check_output_folder, unlisted_entries
from ..io.hf.parquet import MAX_SHARD_BYTES, write_split
from ..io.hf.png import DEFAULT_PNG, PNG_ENCODERS
from ..io.hf.repo import CARD, recorded_shard_hashes
from ..io.hf.schema import PIXEL_FORMATS, SplitData, features_for, hf_split_name
from ..io.types import StrPath
from .card import dataset_card
from .croissant import CROISSANT, croissant_metadata

logger = logging.getLogger(__name__)

#: a split as an :class:`ExportConfig` takes it: arrays, ``(images, labels[, metadata])``, or a callable returning one
SplitSource = SplitData | Sequence[Any] | Callable[[], SplitData | Sequence[Any]]


@dataclass
class ExportConfig:
    """A dataset to export as one Hub config. ``name``: the config (the dataset's name); ``splits``: ``{split:
    SplitData or (images, labels[, metadata])}``, or a callable returning one, called when the split is written (a
    large export holds one split in memory at a time); ``classes[i]``: the ClassLabel name of label ``i``;
    ``description``: a paragraph for the card; ``source``: where the data comes from; ``provenance``: rendered in the
    card (version, parameters, ``inputs``, notes); ``license``, ``license_name``: the Hub's licence id and a name for
    ``other``; ``citation``: BibTeX; ``label_note``: how labels are numbered; ``caveats``: a sentence each;
    ``synthetic``: built from a synthetic SD19 replica (the card says so in the config's first lines)."""

    name: str
    splits: dict[str, SplitSource]
    classes: list[Any]
    description: str = ""
    source: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)
    license: str | None = None
    license_name: str | None = None
    citation: str | None = None
    label_note: str | None = None
    caveats: list[str] = field(default_factory=list)
    pretty_name: str | None = None
    synthetic: bool = False

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", self.name or ""):
            raise ConfigError("invalid config name", expected="letters, digits, '-', '_', '.'", found=repr(self.name))
        if not self.splits:
            raise ConfigError(f"config {self.name!r} has no split", expected="at least one split", found="none")
        fixed: dict[str, SplitSource] = {}
        for split, data in self.splits.items():
            if not (isinstance(data, SplitData) or callable(data)):
                data = SplitData(*data)
            fixed[hf_split_name(split)] = data
        self.splits = fixed
        self.classes = [str(c) for c in self.classes]
        if len(set(self.classes)) != len(self.classes):
            dup = sorted({c for c in self.classes if self.classes.count(c) > 1})
            raise ConfigError(f"config {self.name!r}: class names must be unique for ClassLabel",
                              expected="distinct names", found=f"duplicates {dup}")
        for split, data in self.splits.items():
            if isinstance(data, SplitData):
                self.check_split(split, data)

    def check_split(self, split: str, data: SplitData) -> None:
        """Raise ConfigError when a label has no class."""
        if len(data.labels) and (data.labels.min() < 0 or data.labels.max() >= len(self.classes)):
            raise ConfigError(f"config {self.name!r} split {split!r}: label out of range",
                              expected=f"0..{len(self.classes) - 1} ({len(self.classes)} classes)",
                              found=f"{int(data.labels.min())}..{int(data.labels.max())}")

    def split_data(self, split: str) -> SplitData:
        """The split's arrays (calling a lazy loader; see ``splits``), checked."""
        data = self.splits[split]
        if callable(data):
            data = data()
            if not isinstance(data, SplitData):
                data = SplitData(*data)
            self.check_split(split, data)
        assert isinstance(data, SplitData), "__post_init__ made every split SplitData or a callable"
        return data


def export_problems(folder: StrPath) -> list[str]:
    """What ``--overwrite`` would destroy in ``folder`` beyond an export of this package: the
    export's record is its card (naming mnistforge, listing every shard's sha256) and
    ``croissant.json``; any other file, and a card without that record, is named.

    >>> import tempfile, os, numpy as np
    >>> cfg = ExportConfig("toy", {"test": (np.zeros((2, 28, 28), np.uint8), np.array([1, 0]))}, ["x", "y"])
    >>> out = os.path.join(tempfile.mkdtemp(), "r"); _ = export_hf(out, [cfg], workers=1)
    >>> export_problems(out), open(os.path.join(out, "notes.txt"), "w").close(), export_problems(out)
    ([], None, ['notes.txt (not listed)'])
    """
    folder = Path(folder)
    try:
        card = (folder / CARD).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return [f"{CARD} (missing: not an export)"]
    recorded = recorded_shard_hashes(folder)
    if "mnistforge" not in card or not recorded:
        return [f"{CARD} (no record of the shards mnistforge exported)"]
    return unlisted_entries(folder, {CARD: None, CROISSANT: None, **dict.fromkeys(recorded)})


def export_hf(repo_dir: StrPath, configs: list[ExportConfig], *, overwrite: bool = False,
              max_shard_bytes: int = MAX_SHARD_BYTES, workers: int | None = None, croissant: bool = True,
              repo_id: str | None = None, title: str | None = None, inputs: Iterable[StrPath | None] = (),
              pixels: str | None = None, png: str | None = None, num_shards: int | None = None) -> dict[str, Any]:
    """Write a Hub dataset repository folder holding ``configs``; return its summary (configs, splits, files).

    Built under ``<repo_dir>.incomplete``, renamed when complete; the first config is the default. ``repo_dir`` must
    not exist unless ``overwrite`` (then it must be an earlier export holding nothing else: :func:`export_problems`)
    nor overlap ``inputs``. Splits are cut in order into ``num_shards`` equal-row shards, or by default into
    :func:`~mnistforge.io.hf.parquet.shard_count`'s count (120 for 60,000 rows) or its next multiple that keeps
    each under ``max_shard_bytes`` of PNG; every row holds its index in the split (``row_id``). ``pixels``: also
    store every image undecoded (:func:`~mnistforge.io.hf.schema.features_for`); ``png``: the encoder
    (:data:`~mnistforge.io.hf.png.PNG_ENCODERS`); either way the same data gives the same bytes run to run.

    >>> import tempfile, os, numpy as np
    >>> cfg = ExportConfig("toy", {"test": (np.zeros((2, 28, 28), np.uint8), np.array([1, 0]))}, ["x", "y"])
    >>> out = export_hf(os.path.join(tempfile.mkdtemp(), "r"), [cfg], workers=1)
    >>> out["configs"][0]["splits"][0]["files"]
    ['data/toy/test-00000-of-00001.parquet']
    >>> export_hf(os.path.join(tempfile.mkdtemp(), "r"), [cfg], num_shards=2)["configs"][0]["splits"][0]["shard_rows"]
    [1, 1]
    """
    require("datasets", "hf", "export hf")  # before any work
    names = [c.name for c in configs]
    pixels = pixels or None
    if pixels is not None and pixels not in PIXEL_FORMATS:
        raise ConfigError("unknown pixels layout", expected=" or ".join(PIXEL_FORMATS), found=repr(pixels))
    png = png or DEFAULT_PNG
    if png not in PNG_ENCODERS:
        raise ConfigError("unknown PNG encoder", expected=" or ".join(PNG_ENCODERS), found=repr(png))
    if not configs:
        raise ConfigError("nothing to export", expected="at least one dataset", found="none")
    if len(set(names)) != len(names):
        raise ConfigError("config names must be distinct", expected="one config per dataset", found=", ".join(names),
                          hint="rename one with CONFIG=TARGET on the command line")
    repo_dir = Path(repo_dir)
    summary: dict[str, Any] = {"repo_dir": str(repo_dir), "configs": []}
    check_output_folder(repo_dir, inputs=inputs, overwrite=overwrite, owned=export_problems)
    with atomic_dir(repo_dir, overwrite=overwrite, inputs=inputs, owned=export_problems) as tmp:
        for cfg in configs:
            features, first_dt, shapes, splits = None, None, set(), []
            for s in cfg.splits:
                d = cfg.split_data(s)
                dt = d.metadata.dtype if d.metadata is not None else None
                if features is None:
                    features = features_for(cfg.classes, dt, pixels=pixels, pixels_shape=d.images.shape[1:],
                                            row_id=True)
                    first_dt = dt
                elif dt != first_dt:
                    raise ConfigError(f"config {cfg.name!r}: every split needs the same metadata "
                                      "fields", expected=str(first_dt), found=f"{dt} in {s}")
                shapes.add(d.images.shape[1:])
                splits.append(write_split(tmp, cfg.name, s, d, features, max_shard_bytes=max_shard_bytes,
                                          workers=workers, png=png, num_shards=num_shards))
                del d
            summary["configs"].append({"config": cfg, "name": cfg.name, "features": features,
                                       "splits": splits, "image_shapes": sorted(shapes)})
        card = dataset_card(summary["configs"], repo_id=repo_id, title=title, folder=tmp, png=png)
        with atomic_file(tmp / CARD, "w") as f:
            f.write(card)
        if croissant:
            doc = croissant_metadata(summary["configs"], tmp, repo_id=repo_id, title=title)
            with atomic_file(tmp / CROISSANT, "w") as f:
                json.dump(doc, f, indent=2, ensure_ascii=False)
                f.write("\n")
    for c in summary["configs"]:
        del c["config"], c["features"]
    logger.info("exported %d config(s) to %s", len(configs), repo_dir)
    return summary
