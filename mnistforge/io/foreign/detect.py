"""Which third-party format a path holds, decided from its content (its name only breaks ties).

:func:`sniff` looks at the first bytes of a file (decompressing gzip/xz/bz2
when the bytes, not the suffix, say so) or at what a folder holds; :func:`read_foreign` dispatches to the
reader.  Pickles (``torch.save`` output, ``.pkl``, a zip holding ``data.pkl``) are recognised and refused with
:class:`~mnistforge.errors.UnsafeFormatError`: nothing here ever unpickles.

Formats: ``npz``, ``npy``, ``csv``, ``parquet``, ``mat``, ``idx`` (a single idx file, or a folder of idx files
under any names), ``torchvision`` (``root/<Name>/raw``), and ``pickle`` (refused).

>>> import numpy as np, tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "no-suffix")
>>> np.save(open(p, "wb"), np.zeros(3))
>>> sniff(p)
'npy'
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from ...errors import FormatError
from ..compression import open_sniffed, sniff_compression
from .base import ForeignCopy, role_of
from ..types import StrPath
from .csvfile import read_csv, read_csv_folder
from .mat import read_mat
from .npz import read_npy_folder, read_npy_pair, read_npz
from .parquet import read_parquet
from .torchvision import read_idx_folder, read_torchvision, refuse_pickle
from .base import IMAGE_TOKENS, LABEL_TOKENS, _tokens


__all__ = ["FORMATS", "is_foreign", "read_foreign", "sniff"]

FORMATS = ("npz", "npy", "csv", "parquet", "mat", "idx", "torchvision", "pickle")

IDX_TYPES = {0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E}


def _sniff_bytes(head: bytes) -> str | None:
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"MATLAB") or head.startswith(b"\x89HDF"):
        return "mat"
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "pickle"  # PROTO opcode: every pickle of protocol 2+ starts so (torch.save's legacy format)
    if len(head) >= 4 and head[:2] == b"\0\0" and head[2] in IDX_TYPES and 1 <= head[3] <= 4:
        return "idx"
    text = head[:4096]
    try:
        s = text.decode("ascii")
    except UnicodeDecodeError:
        return None
    if "," in s and all(c.isdigit() or c in ",.-+eE\r\n\" _abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        for c in s):
        return "csv"
    return None


def _sniff_zip(path: Path) -> str:
    import zipfile  # only for a zip: a load from a folder of idx files asks this module first

    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except zipfile.BadZipFile as e:
        raise FormatError("damaged zip", path=path, expected="a zip archive", found=str(e)) from e
    if any(n == "data.pkl" or n.endswith("/data.pkl") for n in names):
        return "pickle"  # torch.save's zip format: the tensors' structure is a pickle
    if names and all(n.endswith(".npy") for n in names):
        return "npz"
    raise FormatError("a zip that is neither .npz nor a known dataset layout", path=path,
                      expected="a NumPy .npz archive", found=", ".join(names[:5]) or "an empty zip",
                      hint="unpack it and verify the folder")


def _sniff_file(path: Path) -> str:
    with open(path, "rb") as f:
        head = f.read(4096)
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return _sniff_zip(path)
    if sniff_compression(head):
        with open_sniffed(path) as f:
            inner = f.read(4096)
        kind = _sniff_bytes(inner)
    else:
        kind = _sniff_bytes(head)
    if kind is None:
        raise FormatError("unrecognised file format", path=path, expected="npz, npy, CSV, parquet, MATLAB .mat or idx",
                          found=f"first bytes {head[:8]!r}")
    return kind


def _sniff_dir(path: Path) -> str:
    files = [p for p in path.iterdir() if p.is_file()]
    kinds: set[str] = set()
    for p in files:
        if p.name.startswith(".") or role_of(p.name) is None and ".csv" not in p.name.lower():
            continue
        try:
            kinds.add(_sniff_file(p))
        except FormatError:
            continue
    for kind in ("pickle", "idx", "npy", "csv", "npz", "mat", "parquet"):
        if kind in kinds:
            return kind
    if (path / "raw").is_dir() or (path / "processed").is_dir() or \
            any((p / "raw").is_dir() or (p / "processed").is_dir() for p in path.iterdir()
                if p.is_dir()):
        return "torchvision"
    if any(path.rglob("*.parquet")):
        return "parquet"
    raise FormatError("no dataset files recognised", path=path,
                      expected="idx files, .npy pairs, CSV, parquet shards or <Name>/raw",
                      found=", ".join(sorted(p.name for p in files)[:6]) or "an empty folder")


def sniff(path: StrPath) -> str:
    """The format of ``path`` (one of :data:`FORMATS`), from its content."""
    path = Path(path)
    if path.is_dir():
        return _sniff_dir(path)
    if not path.is_file():
        raise FormatError("nothing there", path=path, expected="a file or folder", found="no such path")
    return _sniff_file(path)


def is_foreign(path: StrPath) -> bool:
    """Whether ``path`` is a third-party copy this package reads (a file, or a folder in one of
    :data:`FORMATS` other than plain idx folders, which the loaders read by official names)."""
    try:
        kind = sniff(path)
    except FormatError:
        return False
    return Path(path).is_file() or kind != "idx"


#: format -> the function reading a folder / a file of it
_FOLDER_READERS: dict[str, Callable[..., ForeignCopy]] = {
    "torchvision": read_torchvision, "parquet": read_parquet, "npy": read_npy_folder,
    "idx": read_idx_folder, "csv": read_csv_folder}
_FILE_READERS: dict[str, Callable[..., ForeignCopy]] = {"npz": read_npz, "csv": read_csv, "parquet": read_parquet,
                                                        "mat": read_mat, "npy": read_npy_pair, "idx": read_idx_folder}


def read_foreign(path: StrPath, *, torchvision_classes: Mapping[str, str] | None = None) -> ForeignCopy:
    """Read a third-party copy (see :data:`FORMATS`); pickles raise ``UnsafeFormatError``. ``torchvision_classes`` maps
    torchvision class folders to the datasets they hold (:func:`mnistforge.registry.torchvision_folders`: a dataset
    fact this layer does not know)."""
    path = Path(path)
    kind = sniff(path)
    if kind == "torchvision" and path.is_dir():
        return _FOLDER_READERS[kind](path, torchvision_classes)
    if kind == "pickle":
        bad = path if path.is_file() else next(p for p in sorted(path.iterdir()) if p.is_file()
                                                and _safe_sniff(p) == "pickle")

        raise refuse_pickle(bad)
    if path.is_dir():
        return _FOLDER_READERS[kind](path) if kind != "npz" else _FILE_READERS["npz"](next(path.glob("*.npz")))
    if kind == "npy":
        partner = _npy_partner(path)
        if partner is None:
            raise FormatError("a lone .npy file", path=path,
                              expected="an images/labels pair (x_train.npy + y_train.npy)",
                              found="no partner file next to it", hint="give the folder holding both")
        images, labels = (path, partner) if role_of(path.name) != "labels" else (partner, path)
        return _FILE_READERS["npy"](images, labels)
    if kind == "idx":
        return _FILE_READERS["idx"](path.parent)
    return _FILE_READERS[kind](path)


def _safe_sniff(p: Path) -> str | None:
    try:
        return _sniff_file(p)
    except FormatError:
        return None


def _npy_partner(path: Path) -> Path | None:
    role = role_of(path.name)
    if role is None:
        return None

    mine = _tokens(path.name)
    other = LABEL_TOKENS if role == "images" else IMAGE_TOKENS
    for p in sorted(path.parent.glob("*.npy")):
        toks = _tokens(p.name)
        if p != path and len(toks) == len(mine) and role_of(p.name) != role and \
                all(a == b or (a in other or b in other) for a, b in zip(mine, toks)):
            return p
    return None
