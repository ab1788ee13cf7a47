"""SD19 trees: find the hierarchies of a source (zips or folders, either edition) and parse their file names."""
from __future__ import annotations

import dataclasses
import logging
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import MissingSourceError, SD19FormatError
from . import index as _index
from .nist_table import FIELD_DIRS, FIELDS, PARTITION_ORDER
from .zipdir import ZipListing, list_zip, read_members

logger = logging.getLogger(__name__)

HIERARCHIES = ("by_write", "by_class", "by_merge", "by_field")
_FIELD_RANK = {f: i for i, f in enumerate(FIELDS)}
_PART_RANK = {p: i for i, p in enumerate(PARTITION_ORDER)}
_DIR_FIELD = {v: k for k, v in FIELD_DIRS.items()}

# by_write, relative to the hierarchy root
_BW_PNG = re.compile(r"^hsf_(\d)/f(\d{4})_(\d{2})/([dulc])(\d{4})_(\d{2})/[dulc]\d{4}_\d{2}_(\d+)\.png$", re.I)
_BW_MIS = re.compile(r"^hsf_(\d)/f(\d{4})_(\d{2})/([dulc])(\d{4})_(\d{2})\.mis$", re.I)
_BW_CLS = re.compile(r"^hsf_(\d)/f(\d{4})_(\d{2})/([dulc])(\d{4})_(\d{2})\.cls$", re.I)
# by_class: XX/hsf_N/hsf_N_NNNNN.png or XX/hsf_N.mis (train_XX sets are copies: skipped)
_BC_PNG = re.compile(r"^([0-9a-f]{2})/hsf_(\d)/hsf_\d_(\d+)\.png$", re.I)
_BC_MIS = re.compile(r"^([0-9a-f]{2})/hsf_(\d)\.mis$", re.I)
# by_field: hsf_N/FIELD/XX/XX_NNNNN.png, or hsf_N/FIELD/XX.mis or hsf_N/FIELD/XX/XX.mis
_BF_PNG = re.compile(r"^hsf_(\d)/(digit|upper|lower|const)/([0-9a-f]{2})/[0-9a-f]{2}_(\d+)\.png$", re.I)
_BF_MIS = re.compile(r"^hsf_(\d)/(digit|upper|lower|const)/(?:[0-9a-f]{2}/)?([0-9a-f]{2})\.mis$", re.I)
_INTERESTING = (".png", ".mis", ".cls", ".mit")


# --- trees: one hierarchy, in a zip or a folder ----------------------------------------------

@dataclasses.dataclass
class Tree:
    """One hierarchy of a source: its files (relative POSIX names) in a zip or a folder."""

    hierarchy: str
    kind: str                    # "zip" or "dir"
    location: Path               # the zip file, or the hierarchy's folder
    prefix: str = ""             # zip: member prefix before the relative names
    _names: list[str] | None = None
    _listing: ZipListing | None = None
    _pos: dict[str, int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Sent to worker processes: the listing is re-made there only if needed.
        state = dict(self.__dict__)
        state.update(_names=None, _listing=None, _pos=None)
        return state

    @property
    def display(self) -> str:
        return f"{self.location}:{self.prefix}" if self.kind == "zip" else str(self.location)

    def _list(self) -> None:
        if self._names is not None:
            return
        if self.kind == "zip":
            pre = self.prefix
            lst = list_zip(self.location, name_filter=lambda n: n.startswith(pre) and n.lower().endswith(_INTERESTING))
            order = sorted(range(len(lst)), key=lst.names.__getitem__)
            self._listing = lst.take(order)
            self._names = [n[len(pre):] for n in self._listing.names]
        else:
            names: list[str] = []
            root = str(self.location)
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
                rel = "" if rel == "." else rel + "/"
                names.extend(rel + f for f in filenames if f.lower().endswith(_INTERESTING))
            names.sort()
            self._names = names

    @property
    def names(self) -> list[str]:
        self._list()
        assert self._names is not None  # _list() filled it
        return self._names

    def file_table(self, idx: npt.ArrayLike) -> np.ndarray:
        """:data:`~mnistforge.sd19.index.FILE_DTYPE` rows for files ``idx``."""
        all_names = self.names
        idx = np.asarray(idx, np.int64)
        names = [all_names[i].encode() for i in idx]
        t = np.zeros(len(idx), _index.file_dtype(max(map(len, names), default=1)))
        t["name"] = names
        if self._listing is not None:
            for f in ("offset", "csize", "usize", "method", "crc"):
                t[f] = getattr(self._listing, f)[idx]
        return t

    def spec(self) -> tuple[str, str, str]:
        """What a worker needs to open this tree itself (picklable, small)."""
        return (self.kind, str(self.location), self.prefix)

    def read_bytes(self, name: str) -> bytes:
        """The bytes of one file, by relative name."""
        self._list()
        if self.kind == "dir":
            with open(self.location / name, "rb") as f:
                return f.read()
        if self._pos is None:
            self._pos = {n: i for i, n in enumerate(self.names)}
        i = self._pos[name]
        assert self._listing is not None  # a zip tree's _list() made it
        return read_members(self.location, self._listing, [i])[0]

    def fingerprint_items(self) -> list[tuple[str, int, int]]:
        """(name, size, mtime) items identifying this tree's content."""
        if self.kind == "zip":
            st = os.stat(self.location)
            return [(f"{self.location.name}:{self.prefix}", st.st_size, st.st_mtime_ns)]
        # Folder: every directory's mtime and entry count, without a stat per image
        # (adding, removing or renaming a file changes its folder's mtime).
        items: list[tuple[str, int, int]] = []
        root = str(self.location)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            st = os.stat(dirpath)
            rel = os.path.relpath(dirpath, root)
            items.append((f"{self.hierarchy}/{rel}", len(filenames), st.st_mtime_ns))
            for f in sorted(filenames):
                if not f.lower().endswith(".png"):
                    fs = os.stat(os.path.join(dirpath, f))
                    items.append((f"{self.hierarchy}/{rel}/{f}", fs.st_size, fs.st_mtime_ns))
        return items


def _zip_hierarchies(zpath: Path) -> dict[str, str]:
    """Hierarchies inside one zip: name -> member prefix."""
    stem = zpath.stem.lower()
    found: dict[str, str] = {}
    # A zip named after its hierarchy only needs its first members to find the prefix.
    limit = 64 if stem in HIERARCHIES else None
    lst = list_zip(zpath, name_filter=lambda n: n.lower().endswith(_INTERESTING), limit=limit)
    for name in lst.names:
        parts = name.split("/")
        for i, p in enumerate(parts[:-1]):
            if p in HIERARCHIES and p not in found:
                found[p] = "/".join(parts[:i + 1]) + "/"
                break
    if not found and stem in HIERARCHIES and lst.names:
        found[stem] = ""   # members directly under the zip root
    return found


def find_trees(path: str | os.PathLike[str]) -> dict[str, Tree]:
    """Locate the hierarchies under ``path``: ``{hierarchy: Tree}`` (folders win over zips)."""
    path = Path(path)
    trees: dict[str, Tree] = {}
    zips: list[Path]
    base: Path | None
    if path.is_file() and path.suffix.lower() == ".zip":
        zips, base = [path], None
    elif path.is_dir():
        zips, base = sorted(p for p in path.glob("*.zip") if p.is_file()), path
    else:
        raise MissingSourceError("SD19 source not found", path=path,
                                 expected="a folder holding by_write.zip/by_class.zip/... or by_write/, by_class/, ...",
                                 found="nothing there", hint="point at the folder where the SD19 zips or trees are "
                                      "(or run `mnistforge fetch sd19` / `mnistforge synth-sd19`)")
    if base is not None:
        if base.name in HIERARCHIES:
            trees[base.name] = Tree(base.name, "dir", base)
        for h in HIERARCHIES:
            for cand in (base / h, base / "data" / h):
                if h not in trees and cand.is_dir():
                    trees[h] = Tree(h, "dir", cand)
    for z in zips:
        if z.stem.lower() == "hsf_page":
            continue   # form pages: not needed, and big
        for h, prefix in _zip_hierarchies(z).items():
            if h in trees:
                logger.info("SD19 %s: using %s, ignoring the copy in %s", h, trees[h].display, z)
                continue
            trees[h] = Tree(h, "zip", z, prefix)
    return trees


# --- parsing the trees ------------------------------------------------------------------------

@dataclasses.dataclass
class _Chars:
    """Characters of a classed tree (by_class or by_field), as files (+ entries for .mis)."""

    files: list[int]      # file indices in the tree
    hsf: np.ndarray       # per file
    field: np.ndarray | None
    ascii: np.ndarray     # per file
    fmt: str              # "png" or "mis"


def _parse_by_write(tree: Tree) -> tuple[int, list[tuple[Any, ...]], dict[tuple[int, int, int, str], int], list[str]]:
    """Files of by_write in walk order, and the .cls files: (edition, records, cls)."""
    names = tree.names
    png: list[tuple[int, re.Match[str]]] = []
    mis: list[tuple[int, re.Match[str]]] = []
    cls: dict[tuple[int, int, int, str], int] = {}
    other = 0
    for i, n in enumerate(names):
        if m := _BW_PNG.match(n):
            png.append((i, m))
        elif m := _BW_MIS.match(n):
            mis.append((i, m))
        elif m := _BW_CLS.match(n):
            cls[(int(m[1]), int(m[2]), int(m[3]), m[4].lower())] = i
        else:
            other += 1
    if png and mis:
        raise SD19FormatError("by_write mixes editions", path=tree.display,
                              expected="only PNG folders (2nd edition) or only .mis files (1st edition)",
                              found=f"{len(png)} PNGs and {len(mis)} .mis files", hint="point at one edition at a time")
    if not png and not mis:
        raise MissingSourceError("by_write holds no characters", path=tree.display,
                                 expected="hsf_N/fWWWW_TT/dWWWW_TT/*.png or hsf_N/fWWWW_TT/dWWWW_TT.mis",
                                 found=f"{len(names)} files, none of them SD19 characters")
    edition = 2 if png else 1
    recs: list[tuple[Any, ...]] = []
    anomalies: list[str] = []
    for i, m in (png or mis):
        hsf, w, t, f = int(m[1]), int(m[2]), int(m[3]), m[4].lower()
        if hsf not in _PART_RANK:
            anomalies.append(f"unexpected partition hsf_{hsf} in {names[i]}")
            continue
        if (int(m[5]), int(m[6])) != (w, t):
            anomalies.append(f"{names[i]}: field file writer/template differ from its folder")
        entry = int(m[7]) if edition == 2 else 0
        recs.append((_PART_RANK[hsf], names[i].split("/")[1].lower(), _FIELD_RANK[f], entry, hsf, w, t, f, i))
    recs.sort()
    if other:
        logger.debug("%s: %d files not part of the by_write layout ignored", tree.display, other)
    return edition, recs, cls, anomalies


def _parse_classed(tree: Tree) -> _Chars | None:
    """Characters of by_class (hsf_N sets only) or by_field, file by file, in tree order."""
    files: list[int] = []
    hsf: list[int] = []
    field: list[str] = []
    asc: list[int] = []
    fmt = "png"
    for i, n in enumerate(tree.names):
        if tree.hierarchy == "by_class":
            if not (m := _BC_PNG.match(n) or _BC_MIS.match(n)):
                continue
            files.append(i)
            asc.append(int(m[1], 16))
            hsf.append(int(m[2]))
        elif tree.hierarchy == "by_field":
            if not (m := _BF_PNG.match(n) or _BF_MIS.match(n)):
                continue
            files.append(i)
            hsf.append(int(m[1]))
            field.append(_DIR_FIELD[m[2].lower()])
            asc.append(int(m[3], 16))
        else:
            return None
        fmt = "png" if n.lower().endswith(".png") else "mis"
    if not files:
        return None
    return _Chars(files, np.array(hsf, np.uint8), np.array(field, "S1") if field else None,
                  np.array(asc, np.uint8), fmt)
