"""What ``verify``'s checks know about their target: the :class:`Context` every row of
:data:`~.rows.CHECKS` is run with, a loaded split's :class:`SplitItem`, and the expected
count and class range of a split (build manifest first, then the card or the registry)."""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..io.manifest import Manifest
from ..io.similar import xorshift_image_digests
from ..registry import DatasetInfo
from . import statistics, writers
from .table import Kind, Scope


CROSS_PAIRS = (("train", "test"),)


@dataclasses.dataclass(eq=False)
class Context:
    """What the checks need to know about the target (the ``ctx`` of every row's ``run``)."""

    name: str | None
    info: DatasetInfo | None = None
    root: Path | None = None
    split: str | None = None          # the split asked for (``TARGET:SPLIT``), if any
    kind: Kind = "cache"
    folder: Path | None = None
    manifest: Manifest | None = None
    folder_manifest_root: Path | None = None
    loaded: dict[str, Any] = dataclasses.field(default_factory=dict)
    card_counts: dict[str, int] = dataclasses.field(default_factory=dict)  # an HF export: rows per split
    wanted: list[str] = dataclasses.field(default_factory=list)      # splits to load
    skipped: set[str] = dataclasses.field(default_factory=set)       # ... whose files are missing
    used_files: list[Path] = dataclasses.field(default_factory=list)
    contents: dict[Any, Any] = dataclasses.field(default_factory=dict)    # parse inflates once for hashes
    reads: dict[Path, Any] = dataclasses.field(default_factory=dict)       # each file as the load read it
    options: dict[str, Any] = dataclasses.field(default_factory=dict)     # verify's keyword arguments
    seen: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)  # digests of each loaded split

    def digests(self, ds: Any) -> np.ndarray:
        """Per-image digests of a loaded split (``ds`` stays in :attr:`loaded`), made once for every duplicate check."""
        if id(ds) not in self.seen:
            self.seen[id(ds)] = xorshift_image_digests(ds.images)
        return self.seen[id(ds)]

    def items(self, scope: Scope) -> Iterable[tuple[dict[str, str], Any]]:
        """(placeholders, item) for the target / each split to load / loaded split / pair."""
        return _ITEMS[scope](self)

    @property
    def is_build(self) -> bool:
        return self.manifest is not None

    @property
    def entry(self) -> DatasetInfo:
        """The registry entry (the rows that use it apply to targets of a known dataset)."""
        if self.info is None:
            raise LookupError(f"{self.name or self.root}: no registry entry")
        return self.info

    @property
    def where(self) -> Path:
        """The target's folder (the rows that use it apply to folders and exports)."""
        if self.root is None:
            raise LookupError(f"{self.name}: not a folder")
        return Path(self.root)


_ITEMS: dict[Scope, Callable[[Context], Iterable[tuple[dict[str, str], Any]]]] = {
    "target": lambda c: [({}, None)],
    "wanted": lambda c: [({"split": s}, s) for s in c.wanted],
    # lazily: a split's SplitItem is made when its turn comes, after the rows of the one before
    "split": lambda c: (({"split": s}, SplitItem(c, s, ds)) for s, ds in c.loaded.items()),
    "pair": lambda c: [({"pair": f"{a}-{b}"}, (c.loaded[a], c.loaded[b])) for a, b in CROSS_PAIRS
                       if a in c.loaded and b in c.loaded],
}


def _build_entry(ctx: Context) -> Any:
    """The target dataset's entry in the build manifest, if any."""
    return ctx.manifest.dataset(ctx.name) if ctx.manifest is not None and ctx.name else None


def expected_count(ctx: Context, split: str) -> tuple[int | None, str]:
    """(count, source) for a split: build manifest first, then the registry."""
    entry = _build_entry(ctx)
    counts = dict(entry.counts) if entry is not None else {}
    if isinstance(counts.get(split), int):
        return int(counts[split]), "build manifest"
    if split in ctx.card_counts:
        return int(ctx.card_counts[split]), "dataset card"
    if ctx.manifest is not None:
        # A build from a partial or synthetic SD19 has its own sizes; without
        # them in the manifest the registry size would be a false alarm.
        if ctx.info is not None and split in ctx.info.splits and not ctx.manifest.from_synthetic_sd19:
            return ctx.info.split(split).count, "registry"
        return None, "build manifest (no size recorded)"
    if ctx.info is not None and split in ctx.info.splits:
        return ctx.info.split(split).count, "registry"
    return None, "registry"


def class_range(ctx: Context, ds: Any) -> tuple[int, int]:
    """(number of classes, first label) for a split."""
    info = getattr(ds, "info", None) or ctx.info
    classes = list(getattr(ds, "classes", None) or (info.classes if info else []))
    offset = int(info.label_offset) if info is not None else 0
    entry = _build_entry(ctx)
    n = len(classes) - offset if classes else int(np.max(ds.labels)) + 1
    if entry is not None and entry.classes is not None and entry.classes != n:
        return int(entry.classes), 0  # e.g. the paper's 37-class letters variant
    return n, offset


class SplitItem:
    """One loaded split and what several rows need of it."""

    def __init__(self, ctx: Context, split: str, ds: Any) -> None:
        self.split, self.ds = split, ds
        self.metadata = getattr(ds, "metadata", None)
        self.n_cls, self.offset = class_range(ctx, ds)
        # a copy whose rows map to official rows (a subset): its size and balance are its own
        self.part = getattr(ds, "row_map", None) is not None and bool(ds.row_map.mapped.any())

    @functools.cached_property
    def moments(self) -> statistics.Moments:  # one pass for the statistics and the orientation check
        return statistics.ink_moments(self.ds.images)

    @functools.cached_property
    def metadata_labels(self) -> np.ndarray | None:
        return writers.metadata_labels(self.metadata) if self.metadata is not None else None
