"""Tiny SD19 trees for the reader tests, written with the package's own writers.

The layout follows ../shared/spec/sd19.md; the images are random blobs (not
handwriting): the readers only care about files, order and pixels.
"""
from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import numpy as np

from mnistforge.sd19.ihead import write_cls, write_mis, write_mit
from mnistforge.sd19.png1 import encode_png1
from mnistforge.sd19.synth import DESCRIPTION, SynthConfig, synthesize_sd19

FIELD_DIR = {"d": "digit", "u": "upper", "l": "lower", "c": "const"}
# (partition, writer, template): two writers in hsf_0, one in hsf_4, one in hsf_7
WRITERS = [(0, 0, 14), (0, 3, 7), (4, 2100, 21), (7, 3951, 1), (7, 3951, 2)]
FIELD_SIZES = {"d": 12, "u": 4, "l": 4, "c": 5}


def _blob(rng) -> np.ndarray:
    img = np.zeros((128, 128), bool)
    for _ in range(rng.integers(2, 5)):
        r, c = rng.integers(10, 100, size=2)
        h, w = rng.integers(3, 25, size=2)
        img[r:r + h, c:c + w] = True
    noise = rng.integers(0, 128, size=(6, 2))
    img[noise[:, 0], noise[:, 1]] = True
    return img


def make_chars(seed: int = 0):
    """Expected characters in walk order: list of dicts, and the images (n, 128, 128)."""
    rng = np.random.default_rng(seed)
    chars, imgs = [], []
    for hsf, w, t in WRITERS:
        for f in "dulc":
            if f == "c" and hsf > 2:
                continue
            for e in range(FIELD_SIZES[f]):
                if f == "d":
                    a = 0x30 + int(rng.integers(10))
                elif f == "u":
                    a = 0x41 + int(rng.integers(26))
                elif f == "l":
                    a = 0x61 + int(rng.integers(26))
                else:
                    a = int(rng.choice([0x41 + int(rng.integers(26)), 0x61 + int(rng.integers(26))]))
                chars.append(dict(hsf=hsf, writer=w, template=t, field=f, entry=e, ascii=a))
                imgs.append(_blob(rng))
    imgs = np.array(imgs)
    # one exact duplicate among the digits, as in SD19 (same class, later row)
    digit_rows = [i for i, c in enumerate(chars) if c["field"] == "d"]
    src, dst = digit_rows[2], digit_rows[20]
    imgs[dst] = imgs[src]
    chars[dst]["ascii"] = chars[src]["ascii"]
    return chars, imgs


def _field_file(c) -> str:
    return f"{c['field']}{c['writer']:04d}_{c['template']:02d}"


def _writer_dir(c) -> str:
    return f"hsf_{c['hsf']}/f{c['writer']:04d}_{c['template']:02d}"


def write_tree(root, *, edition: int = 2, packaging: str = "dir", cls: bool = True,
               hierarchies=("by_write", "by_class", "by_field"), seed: int = 0,
               alter_row: int | None = None):
    """Write a tiny SD19 under ``root``; returns (root, chars, images) with chars in walk order.

    ``alter_row`` flips one pixel of that character in by_write only (join test).
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    chars, imgs = make_chars(seed)
    files: dict = {}   # relative path -> bytes

    def put(rel, data):
        files[rel] = data if isinstance(data, bytes) else data.encode()

    groups: dict = {}
    for i, c in enumerate(chars):
        groups.setdefault((c["hsf"], c["writer"], c["template"], c["field"]), []).append(i)
    bw_imgs = imgs.copy()
    if alter_row is not None:
        bw_imgs[alter_row, 0, 0] = ~bw_imgs[alter_row, 0, 0]
    for key, rows in groups.items():
        c = chars[rows[0]]
        base = f"by_write/{_writer_dir(c)}/{_field_file(c)}"
        if edition == 2:
            for r in rows:
                put(f"{base}/{_field_file(c)}_{chars[r]['entry']:05d}.png", encode_png1(bw_imgs[r]))
        else:
            put(base + ".mis", _mis_bytes(bw_imgs[rows]))
        if cls:
            put(base + ".cls", "".join([f"{len(rows)}\n"] + [f"{chars[r]['ascii']:02x}\n" for r in rows]))
    # classed trees: in by_write walk order within each (partition, class)
    by_class: dict = {}
    by_field: dict = {}
    for i, c in enumerate(chars):
        by_class.setdefault((c["ascii"], c["hsf"]), []).append(i)
        by_field.setdefault((c["hsf"], c["field"], c["ascii"]), []).append(i)
    if "by_class" in hierarchies:
        for (a, hsf), rows in sorted(by_class.items()):
            base = f"by_class/{a:02x}/hsf_{hsf}"
            _classed(put, base, f"hsf_{hsf}", rows, chars, imgs, edition)
        for a in sorted({a for a, _ in by_class}):
            rows = sorted(r for (b, hsf), rr in by_class.items() if b == a and hsf != 4 for r in rr)
            if rows:
                _classed(put, f"by_class/{a:02x}/train_{a:02x}", f"train_{a:02x}", rows, chars, imgs, edition)
    if "by_field" in hierarchies:
        for (hsf, f, a), rows in sorted(by_field.items()):
            base = f"by_field/hsf_{hsf}/{FIELD_DIR[f]}/{a:02x}"
            _classed(put, base, f"{a:02x}", rows, chars, imgs, edition)
    for rel, data in files.items():
        if rel.split("/")[0] not in hierarchies:
            continue
        if packaging == "dir":
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
    if packaging == "zip":
        for h in hierarchies:
            with zipfile.ZipFile(root / f"{h}.zip", "w", zipfile.ZIP_DEFLATED) as z:
                for rel in sorted(files):
                    if rel.startswith(h + "/"):
                        z.writestr(rel, files[rel])
    return root, chars, imgs


def _classed(put, base, stem, rows, chars, imgs, edition):
    if edition == 2:
        for k, r in enumerate(rows):
            put(f"{base}/{stem}_{k:05d}.png", encode_png1(imgs[r]))
    else:
        put(base + ".mis", _mis_bytes(imgs[rows]))
        mit = "".join([f"{len(rows)}\n"] + [
            f"{_writer_dir(chars[r])}/{_field_file(chars[r])}.mis {chars[r]['entry']}\n" for r in rows])
        put(base + ".mit", mit)


def _mis_bytes(images) -> bytes:
    import io
    b = io.BytesIO()
    write_mis(b, images)
    return b.getvalue()


def expected_index(chars):
    """(hsf, writer, template, field, entry, ascii) tuples in walk order."""
    return [(c["hsf"], c["writer"], c["template"], c["field"].encode(), c["entry"], c["ascii"])
            for c in chars]


__all__ = ["write_tree", "make_chars", "expected_index", "write_cls", "write_mit", "os"]


def make_tiny_sd19(tmp_path, scale: float = 0.002, edition: int = 2, packaging: str = "zip",
                   seed: int = 0, fields: str = "dulc", **kwargs) -> Path:
    """A small synthetic SD19 for tests (``scale=0.002``: ~1,600 characters, a few seconds).

    Written to ``tmp_path / "sd19-e<edition>-<packaging>-s<seed>-<fields>"`` (reused when it
    already exists, so several tests of a session can share it).

    """
    name = f"sd19-e{edition}-{packaging}-s{seed}-{fields}-x{scale:g}"
    if kwargs:
        name += "-" + hashlib.sha1(repr(sorted(kwargs.items())).encode()).hexdigest()[:8]
    out = Path(tmp_path) / name
    if (out / DESCRIPTION).is_file():
        return out
    config = SynthConfig(scale=scale, edition=edition, packaging=packaging, seed=seed,
                         fields=fields, **kwargs)
    return synthesize_sd19(out, config, progress=False)
