"""One SD19 identity per row (:data:`IDENTITY_DTYPE`, -1 where unknown): ``character`` the SD19 id
(the builds' ``sd19_row``), ``digit`` the NIST digit index (QMNIST's column 5); sources and how
they meet: ``docs/provenance-mnist-qmnist.md``, "Overlaps within the family".

>>> ids = from_metadata(np.array([(4, 2100, 7)], [("hsf", "i4"), ("writer", "i4"), ("nist_index", "i4")]))
>>> ids.tolist()
[(4, 2100, -1, 7)]
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, MnistforgeError
from ..io.manifest import read_manifest
from ..loaders import DatasetSplit, load
from ..loaders.names import parse_split
from ..loaders.targets import resolve_target
from ..loaders.writers import identity_table
from ..registry import get_dataset, get_file

IDENTITY_DTYPE = np.dtype([("hsf", "i2"), ("writer", "i4"), ("character", "i8"), ("digit", "i8")])
PathArg = str | os.PathLike[str]
#: metadata columns each identity field is read from (first found; a Hugging Face export: writer_id)
COLUMNS = {"hsf": ("hsf",), "writer": ("writer", "writer_id"), "character": ("sd19_row",),
           "digit": ("nist_index",)}


@dataclass
class Identities:
    """The identities of one split's rows (``rows``, :data:`IDENTITY_DTYPE`) and their source."""
    target: str
    rows: np.ndarray
    source: str

    def known(self, field: str) -> bool:
        return bool(len(self.rows) == 0 or (self.rows[field] >= 0).all())


def from_metadata(md: np.ndarray) -> np.ndarray:
    """Identities from a structured metadata table (the columns named in the module docstring)."""
    out = np.full(len(md), -1, IDENTITY_DTYPE)
    for field, cols in COLUMNS.items():
        for col in [c for c in cols if c in (md.dtype.names or ())][:1]:
            out[field] = md[col]
    return out


def official(name: str) -> bool:
    """Whether the registry gives official ``name``'s rows their identities (MNIST's, QMNIST's)."""
    return any(sp.identities for sp in get_dataset(name).splits.values())


def _manifest(folder: Path) -> dict[str, Any]:
    try:
        return read_manifest(folder) or {}
    except (OSError, ValueError, MnistforgeError):
        return {}


def _beside(folder: Path, ds: DatasetSplit) -> np.ndarray | None:
    """A built MNIST's identities: the build of the same source and recipe beside it whose tables
    give the official ones (QMNIST: MNIST train is its train, MNIST test the first rows of its test)."""
    base, _ = parse_split(ds.split)
    ids = ds.info.split(base).identities
    if ids is None or (other := get_file(ids[0]).group) == ds.info.group:
        return None
    mine, theirs = _manifest(folder), _manifest(folder.parent / other)
    same = [{k: v for k, v in m.get("parameters", {}).items() if k != "target"} for m in (mine, theirs)]
    if not mine or mine.get("inputs") != theirs.get("inputs") or same[0] != same[1]:
        return None
    q = load(other, base, root=folder.parent / other, with_metadata="files")
    assert q.metadata is not None
    rows = from_metadata(q.metadata)[:int(mine["datasets"][ds.name][base])]
    return rows if ds.indices is None else rows[ds.indices]


def _sd19_of(folder: Path | None, sd19: PathArg | None) -> tuple[Path | None, str | None]:
    """The SD19 source to use (``sd19``, else the build's when there) and the build's fingerprint."""
    inputs = _manifest(folder).get("inputs", {}) if folder is not None else {}
    src: dict[str, Any] = inputs["sd19"] if isinstance(inputs.get("sd19"), dict) else {
        "path": inputs.get("sd19"), "fingerprint": inputs.get("sd19_fingerprint")}
    found = src["path"] if isinstance(src.get("path"), str) and Path(src["path"]).exists() else None
    where = sd19 if sd19 is not None else found
    return (None if where is None else Path(where)), src.get("fingerprint")


def fill_from_sd19(rows: np.ndarray, sd19: PathArg, fingerprint: str | None = None) -> np.ndarray:
    """``character`` from ``digit`` and back, writer and hsf where missing, through an SD19 index;
    ``fingerprint``: the source the rows were built from (another's rows are other characters)."""
    from ..sd19 import open_sd19  # the SD19 reader is only needed here

    src = open_sd19(sd19, progress=False)
    if fingerprint and src.fingerprint != fingerprint:
        raise ConfigError("the SD19 source is not the one the build was made from", path=sd19,
                          expected=fingerprint, found=src.fingerprint, hint="give the build's SD19")
    index, rows = src.index, rows.copy()
    digits = np.flatnonzero(index["field"] == b"d")
    need = (rows["character"] < 0) & (rows["digit"] >= 0) & (rows["digit"] < len(digits))
    rows["character"][need] = digits[rows["digit"][need]]
    has = (rows["character"] >= 0) & (rows["character"] < len(index))
    for f, col in (("digit", "digit_index"), ("writer", "writer"), ("hsf", "hsf")):
        rows[f][has & (rows[f] < 0)] = index[col][rows["character"][has & (rows[f] < 0)]]
    return rows


def row_identities(target: PathArg, *, tables: PathArg | None = None, sd19: PathArg | None = None,
                   default_split: str = "test") -> Identities:
    """The identities of a CLI target's rows (``NAME[:SPLIT]``, ``FOLDER[:NAME][:SPLIT]``)."""
    name, split, root = resolve_target(target, default_split=default_split)
    label = f"{name}:{split}" if root is None else f"{root}:{name}:{split}"
    folder, rows, source = None, None, "published QMNIST tables"
    if root is None and official(name):
        t = identity_table(name, split, tables=tables)
        rows = np.full(len(t), -1, IDENTITY_DTYPE)
        rows["hsf"], rows["writer"], rows["digit"] = t[:, 1], t[:, 2], t[:, 5]
    else:
        ds = load(name, split, root=root, with_metadata="files")
        folder = next((f for f in ([root, root / name] if root else []) if (f / "manifest.json").is_file()), root)
        if ds.metadata is not None and ds.metadata.dtype.names:
            rows, source = from_metadata(ds.metadata), "the files' metadata"
        elif folder is not None:
            rows, source = _beside(folder, ds), "the QMNIST build beside it"
    if rows is None:
        raise ConfigError(f"no row identities in {label}", found="no writer or SD19 columns",
                          expected="QMNIST tables, a build's side files, official EMNIST .mat",
                          hint="for official EMNIST idx files use the expected overlap")
    where, fp = _sd19_of(folder, sd19)
    if where is not None and not ((rows["character"] >= 0).all() and (rows["digit"] >= 0).all()):
        rows, source = fill_from_sd19(rows, where, fp), f"{source} and the SD19 index of {where}"
    return Identities(label, rows, source)


__all__ = ["IDENTITY_DTYPE", "Identities", "row_identities", "from_metadata", "fill_from_sd19", "official"]
