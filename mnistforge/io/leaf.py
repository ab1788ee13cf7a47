"""LEAF's JSON layout: ``{"users", "num_samples", "user_data": {u: {"x": [...], "y": [...]}}}``.

Written with the bytes ``json.dump`` writes for LEAF's Python objects (default separators,
floats as ``repr(v / 255)``), so a file equals the one LEAF's ``data_to_json.py`` /
``split_data.py`` would write for the same users and pixels, without building 784 Python
floats per image.  Read back strictly (:func:`read_leaf_file`, :func:`read_leaf_folder`).

>>> import io, json, numpy as np
>>> buf = io.BytesIO()
>>> write_leaf_json(buf, ["u"], {"u": (np.array([[0, 255]], np.uint8), [3])})
>>> d = json.loads(buf.getvalue()); d["users"], d["num_samples"], d["user_data"]["u"]["x"][0]
(['u'], [1], [0.0, 1.0])
>>> buf.getvalue() == json.dumps({"users": ["u"], "num_samples": [1], "user_data":
...     {"u": {"x": [[0.0, 1.0]], "y": [3]}}}).encode()
True
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TypedDict

import numpy as np
import numpy.typing as npt

from ..errors import FormatError
from .types import StrPath


__all__ = ["PIXEL_TEXT", "LeafFileContent", "write_leaf_json", "read_leaf_file", "read_leaf_folder", "LEAF_FOLDERS"]

#: ``repr(v / 255)`` of every byte value, as json.dump writes LEAF's ``vec / 255`` floats
PIXEL_TEXT = np.array([repr(v / 255).encode() for v in range(256)], dtype=object)
_SEP = b", "
#: LEAF's folders under ``data/``, in the order preprocess.sh makes them
LEAF_FOLDERS = ("all_data", "sampled_data", "rem_user_data", "train", "test")


class LeafFileContent(TypedDict):
    """One LEAF file as :func:`read_leaf_file` reads it (pixels as floats, labels as ints)."""
    users: list[str]
    num_samples: list[int]
    x: dict[str, npt.NDArray[np.float64]]
    y: dict[str, npt.NDArray[np.int64]]


def _image_text(img: npt.ArrayLike) -> bytes:
    return b"[" + _SEP.join(PIXEL_TEXT[np.asarray(img, np.uint8).ravel()].tolist()) + b"]"


def write_leaf_json(f: IO[bytes], users: Sequence[str], data: Mapping[str, tuple[np.ndarray, Sequence[int]]]) -> None:
    """Write one LEAF file to binary stream ``f``. ``data[u] = (pixels uint8 (n, ...), labels)``: pixels are LEAF's
    0..255 values before its ``/ 255`` (no inversion); labels ints."""
    dumps = json.dumps
    f.write(b'{"users": ' + dumps(list(users)).encode())
    f.write(b', "num_samples": ' + dumps([len(data[u][1]) for u in users]).encode())
    f.write(b', "user_data": {')
    for k, u in enumerate(users):
        px, y = data[u]
        f.write((", " if k else "").encode() + dumps(u).encode() + b': {"x": [')
        for i, img in enumerate(px):
            if i:
                f.write(_SEP)
            f.write(_image_text(img))
        f.write(b'], "y": ' + dumps([int(v) for v in y]).encode() + b"}")
    f.write(b"}}")


def _bad(path: Path, expected: str, found: object) -> FormatError:
    return FormatError("not a LEAF JSON file", path=path, expected=expected, found=found,
                       hint="give a LEAF data folder (train/, test/, all_data/ ... of *.json)")


def read_leaf_file(path: StrPath) -> LeafFileContent:
    """One LEAF file: ``{"users", "num_samples", "x": {u: float (n, 784)}, "y": {u: int (n,)}}``."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise _bad(path, "JSON", str(e)) from None
    if not isinstance(d, dict) or not {"users", "num_samples", "user_data"} <= set(d):
        raise _bad(path, 'an object with "users", "num_samples", "user_data"',
                   sorted(d) if isinstance(d, dict) else type(d).__name__)
    xs: dict[str, npt.NDArray[np.float64]] = {}
    ys: dict[str, npt.NDArray[np.int64]] = {}
    for u, n in zip(d["users"], d["num_samples"]):
        ud = d["user_data"].get(u)
        if not isinstance(ud, dict) or "x" not in ud or "y" not in ud:
            raise _bad(path, f"user_data[{u!r}] with x and y", repr(ud)[:80])
        x = np.asarray(ud["x"], np.float64)
        y = np.asarray(ud["y"], np.int64)
        if len(x) != n or len(y) != n or (n and x.ndim != 2):
            raise _bad(path, f"{n} samples of user {u!r} (num_samples)", f"x {x.shape}, y {y.shape}")
        xs[u], ys[u] = x, y
    if len(d["users"]) != len(d["num_samples"]):
        raise _bad(path, "as many num_samples as users", f"{len(d['num_samples'])} and {len(d['users'])}")
    return {"users": list(d["users"]), "num_samples": list(d["num_samples"]), "x": xs, "y": ys}


def read_leaf_folder(folder: StrPath) -> dict[str, dict[str, LeafFileContent]]:
    """``{subfolder: {file name: read_leaf_file(...)}}`` for LEAF's folders present under
    ``folder`` or ``folder/data`` (sorted by name)."""
    folder = Path(folder)
    base = folder / "data" if (folder / "data").is_dir() else folder
    out: dict[str, dict[str, LeafFileContent]] = {}
    for sub in LEAF_FOLDERS:
        d = base / sub
        if d.is_dir():
            files = sorted((p for p in d.iterdir() if p.suffix == ".json"),
                           key=lambda p: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.name)])
            out[sub] = {p.name: read_leaf_file(p) for p in files}
    return out
