"""A synthetic NIST SD19: same trees, names and formats as the real database, any scale.

The real SD19 (814,255 characters, ~1 GB per hierarchy) cannot be downloaded on
development or CI machines, so every reader, index and builder is tested on this
replica.  It follows the layout of ``docs/sd19.md`` / the project spec exactly:

* hierarchies ``by_write``, ``by_class``, ``by_merge``, ``by_field`` with NIST's
  folder and file names; 2nd edition: one 128x128 1-bit PNG per character in a
  folder named after the former ``.mis`` file (``<set>/<set>_NNNNN.png``),
  packaged as ``by_write.zip`` ... (members start with the hierarchy folder) or
  as unpacked folders; 1st edition: IHEAD + CCITT G4 ``.mis`` with ``.cls`` and,
  outside ``by_write``, ``.mit`` back references;
* writers, partitions, form template ids and per-class counts follow NIST's
  published table (:mod:`mnistforge.sd19.nist_table`) scaled by ``scale``, at
  least one writer per partition, the constitution field only in hsf_0..2, and
  exactly three duplicated digit images (identical pixels, same writer and class,
  like the real ones);
* or, with ``layout=`` a QMNIST/xnist extended-label table, exactly the real
  digit layout (partitions, writers, writer folders, per-writer digit classes in
  walk order, the three duplicates where its column 6 says).

Characters are drawn by :mod:`mnistforge.sd19.glyphs`.  Output is a pure
function of the configuration (byte-identical zips for the same seed); rendering
and PNG encoding run on all cores, one task per group of writer folders, and the
results are written in walk order.

Examples
--------
>>> import tempfile
>>> out = synthesize_sd19(tempfile.mkdtemp() + "/sd19",
...                       SynthConfig(scale=0.0005, fields="d", hierarchies=("by_write",)))
>>> sorted(p.name for p in out.iterdir())
['by_write.zip', 'synthetic-sd19.json']
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import io
import json
import logging
import mmap
import os
import struct
import time
import zlib
from pathlib import Path

import numpy as np

from .. import settings
from ..errors import BuildError, ConfigError, FormatError, MissingFileError
from ..io.atomic import atomic_dir
from ..io.compression import open_reader
from ..progress import progress as _progress_bar
from . import nist_table as nt
from .glyphs import draw_writer_style, render_characters

logger = logging.getLogger(__name__)

__all__ = ["SynthConfig", "synthesize_sd19", "plan_sd19", "make_tiny_sd19", "read_xnist_table",
           "HIERARCHIES", "PLAN_DTYPE"]

HIERARCHIES = ("by_write", "by_class", "by_merge", "by_field")
#: Fixed timestamp of every zip member (the earliest a zip can hold): reproducible zips.
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
#: Form template ids are drawn from 0..TEMPLATES-1 (NIST's guide gives no list; two digits).
TEMPLATES = 100
#: The writer who filled two forms (two by_write folders) in the real SD19.
TWO_FORM_WRITER = 3951
#: Below this many characters rendering stays in-process (a pool costs more than it saves).
PARALLEL_MIN = 3000
#: Name of the description file written next to the hierarchies.
DESCRIPTION = "synthetic-sd19.json"

PLAN_DTYPE = np.dtype([
    ("hsf", "u1"), ("writer", "i2"), ("template", "u1"), ("folder", "i4"), ("field", "S1"),
    ("entry", "i4"), ("ascii", "u1"), ("digit_index", "i4"), ("duplicate_of", "i4"),
])

_SPREAD = 30.0   # Dirichlet concentration of per-writer counts (coefficient of variation ~0.18)


@dataclasses.dataclass(frozen=True)
class SynthConfig:
    """What to synthesise.

    Attributes
    ----------
    scale : float
        Fraction of NIST's published counts, ``0 < scale <= 1`` (1 = 814,255 characters).
        With ``layout`` the digits come from the table; ``scale`` only sizes the other fields.
    edition : int
        2 (2016, PNG per character) or 1 (1995, ``.mis`` + ``.cls`` + ``.mit``).
    packaging : str
        ``"zip"`` (``by_write.zip`` ... as NIST serves them) or ``"dir"`` (unpacked trees).
    seed : int
        Everything random derives from it; same config, same bytes.
    layout : path or None
        QMNIST/xnist extended-label table (``xnist-labels.tsv[.xz]``) whose digit layout to
        reproduce exactly.
    fields : str
        Subset of ``"dulc"``: digits, uppers, lowers, constitution.
    hierarchies : tuple of str
        Which of ``by_write``, ``by_class``, ``by_merge``, ``by_field`` to write.
    by_write_cls : bool
        2nd edition only: also write ``dWWWW_TT.cls`` next to each by_write PNG folder
        (it is unknown whether NIST's zip has them; default off so that readers must join
        by_write with by_class).  The 1st edition always has them.
    layout_partitions, layout_writers : tuple of int or None
        With ``layout``: keep only these partitions / writer ids (fast tests).
    workers : int or None
        Processes for rendering (default: ``$MNISTFORGE_WORKERS`` or the usable cores; small
        jobs run in-process).
    overwrite : bool
        Replace an existing output folder.
    """

    scale: float = 0.01
    edition: int = 2
    packaging: str = "zip"
    seed: int = 0
    layout: str | os.PathLike | None = None
    fields: str = "dulc"
    hierarchies: tuple = HIERARCHIES
    by_write_cls: bool = False
    layout_partitions: tuple | None = None
    layout_writers: tuple | None = None
    workers: int | None = None
    overwrite: bool = False

    def validate(self) -> None:
        if not (0 < float(self.scale) <= 1):
            raise ConfigError("invalid scale", expected="0 < scale <= 1", found=self.scale)
        if self.edition not in (1, 2):
            raise ConfigError("invalid edition", expected="1 or 2", found=self.edition)
        if self.packaging not in ("zip", "dir"):
            raise ConfigError("invalid packaging", expected="'zip' or 'dir'", found=self.packaging)
        if not self.fields or set(self.fields) - set(nt.FIELDS) or len(set(self.fields)) != len(self.fields):
            raise ConfigError("invalid fields", expected="a non-empty subset of 'dulc'",
                              found=self.fields)
        bad = set(self.hierarchies) - set(HIERARCHIES)
        if bad or not self.hierarchies:
            raise ConfigError("invalid hierarchies", expected="a non-empty subset of " +
                              ", ".join(HIERARCHIES), found=", ".join(sorted(bad)) or "none")
        if "d" not in self.fields and self.layout is not None:
            raise ConfigError("--layout describes digits", expected="fields including 'd'",
                              found=self.fields)
        if self.layout is None and (self.layout_partitions or self.layout_writers):
            raise ConfigError("layout_partitions/layout_writers need a layout table",
                              expected="layout=<xnist-labels.tsv.xz>", found="layout=None")


# --------------------------------------------------------------------------------------------
# Class proportions per field

def _apportion(total: int, weights) -> np.ndarray:
    """Integers proportional to ``weights`` summing exactly to ``total`` (largest remainder)."""
    w = np.asarray(weights, dtype=np.float64)
    if total <= 0 or w.sum() <= 0:
        return np.zeros(len(w), dtype=np.int64)
    exact = w / w.sum() * total
    out = np.floor(exact).astype(np.int64)
    rest = int(total - out.sum())
    if rest:
        order = np.lexsort((np.arange(len(w)), -(exact - out)))  # ties: lowest index first
        out[order[:rest]] += 1
    return out


def _water_fill(totals: np.ndarray, amount: int) -> np.ndarray:
    """Integer ``x <= totals`` with ``sum(x) == amount``, as equal as the caps allow."""
    totals = np.asarray(totals, dtype=np.int64)
    lo, hi = 0, int(totals.max())
    while lo < hi:                       # largest level q with sum(min(totals, q)) <= amount
        q = (lo + hi + 1) // 2
        if np.minimum(totals, q).sum() <= amount:
            lo = q
        else:
            hi = q - 1
    x = np.minimum(totals, lo)
    rest = amount - int(x.sum())
    room = np.flatnonzero(x < totals)
    x[room[:rest]] += 1
    return x


def field_class_counts() -> dict[str, dict[int, int]]:
    """NIST's class totals split over the fields, at full scale.

    NIST publishes per-class totals over all fields and per-field totals per
    partition, not the cross table.  Model: every writer prints each letter about
    once in the upper and lower boxes, so the ``u`` (``l``) field takes each
    letter's total up to a common level that makes the published field total, and
    the constitution field takes the rest (hence its many O, S, e, t, ...).
    Digits are all in ``d``.

    Examples
    --------
    >>> c = field_class_counts()
    >>> sum(c["u"].values()), sum(c["c"].values())
    (81463, 248743)
    """
    upper = np.array([nt.CLASS_TOTALS[c] for c in nt.UPPERS])
    lower = np.array([nt.CLASS_TOTALS[c] for c in nt.LOWERS])
    n_u = sum(p.uppers for p in nt.PARTITIONS.values())
    n_l = sum(p.lowers for p in nt.PARTITIONS.values())
    u = _water_fill(upper, n_u)
    lo = _water_fill(lower, n_l)
    return {
        "d": {c: nt.CLASS_TOTALS[c] for c in nt.DIGITS},
        "u": dict(zip(nt.UPPERS, u.tolist())),
        "l": dict(zip(nt.LOWERS, lo.tolist())),
        "c": {**dict(zip(nt.UPPERS, (upper - u).tolist())),
              **dict(zip(nt.LOWERS, (lower - lo).tolist()))},
    }


# --------------------------------------------------------------------------------------------
# The xnist table

def read_xnist_table(path) -> np.ndarray:
    """Read a QMNIST/xnist extended-label table (tsv, optionally .xz/.gz/.bz2) as int64 (n, 8).

    Vectorised: the whole text is split once and converted by NumPy.
    """
    path = Path(path)
    if not path.is_file():
        raise MissingFileError("layout table not found", path=path,
                               expected="a QMNIST/xnist extended-label table (xnist-labels.tsv.xz)",
                               found="no such file")
    with open_reader(path) as f:
        raw = f.read()
    try:
        flat = np.array(raw.split(), dtype=np.int64)
    except ValueError as e:
        raise FormatError("layout table is not all integers", path=path,
                          expected="8 tab-separated integer columns per row", found=str(e)[:80]) from None
    if flat.size == 0 or flat.size % 8:
        raise FormatError("layout table has the wrong shape", path=path,
                          expected="8 integer columns per row", found=f"{flat.size} numbers")
    table = flat.reshape(-1, 8)
    lines = raw.count(b"\n") + (0 if raw.endswith(b"\n") else 1)
    if lines != len(table):
        raise FormatError("layout table has the wrong shape", path=path,
                          expected=f"8 integer columns per row ({len(table)} rows)",
                          found=f"{lines} lines")
    return table


# --------------------------------------------------------------------------------------------
# Planning: one row per character, in by_write walk order

@dataclasses.dataclass
class Plan:
    """The layout of a synthetic SD19 before any pixel is drawn.

    ``rows`` (:data:`PLAN_DTYPE`) lists every character in by_write walk order
    (partitions 0,1,2,3,4,6,7; writer folders by name; fields d,u,l,c; entries in
    file order), which is the order of the readers' index.  ``folders`` holds one
    row per writer folder: ``hsf``, ``writer``, ``template``, ``start``, ``stop``.
    """

    rows: np.ndarray
    folders: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)


_FOLDER_DTYPE = np.dtype([("hsf", "u1"), ("writer", "i2"), ("template", "u1"),
                          ("start", "i8"), ("stop", "i8")])


def _rng(config: SynthConfig, *key) -> np.random.Generator:
    return np.random.default_rng([int(config.seed) & 0xFFFFFFFF, *key])


def _writer_sizes(total: int, n: int, rng) -> np.ndarray:
    """Split ``total`` characters over ``n`` writers, >= 1 each when possible, varied sizes."""
    if n == 0:
        return np.zeros(0, np.int64)
    base = 1 if total >= n else 0
    share = rng.dirichlet(np.full(n, _SPREAD))
    return base + rng.multinomial(total - base * n, share)


def _templates(rng, n: int, distinct_sorted: bool = False) -> np.ndarray:
    if distinct_sorted:
        return np.sort(rng.choice(TEMPLATES, n, replace=False))
    return rng.integers(0, TEMPLATES, n)


def _field_sequences(config, counts: dict[tuple[int, str], int], fields: str) -> dict:
    """Class sequence per (partition, field): exact class totals, shuffled, cut by partition."""
    rng = _rng(config, 11)
    props = field_class_counts()
    out = {}
    for f in fields:
        parts = [p for p in nt.PARTITION_ORDER if counts.get((p, f), 0) > 0]
        total = sum(counts[(p, f)] for p in parts)
        classes = np.array(list(props[f].keys()), dtype=np.uint8)
        per_class = _apportion(total, list(props[f].values()))
        seq = np.repeat(classes, per_class)
        rng.shuffle(seq)
        pos = 0
        for p in parts:
            out[(p, f)] = seq[pos:pos + counts[(p, f)]]
            pos += counts[(p, f)]
    return out


def _scaled_counts(config, fields: str, factor=None) -> dict[tuple[int, str], int]:
    counts = {}
    for p in nt.PARTITION_ORDER:
        part = nt.PARTITIONS[p]
        for f in fields:
            n = part.count(f)
            if n == 0:
                continue
            k = config.scale * n * (factor[p] if factor is not None else 1.0)
            counts[(p, f)] = int(round(k)) if factor is not None else max(1, int(round(k)))
    return counts


def _assemble(folders_meta, per_folder_codes, fields: str) -> Plan:
    """Build the plan arrays from folder metadata and per-folder {field: codes}."""
    n = sum(len(c) for fc in per_folder_codes for c in fc.values())
    rows = np.zeros(n, PLAN_DTYPE)
    folders = np.zeros(len(folders_meta), _FOLDER_DTYPE)
    pos = 0
    for k, ((hsf, writer, template), fc) in enumerate(zip(folders_meta, per_folder_codes)):
        start = pos
        for f in nt.FIELDS:
            codes = fc.get(f)
            if codes is None or len(codes) == 0:
                continue
            m = len(codes)
            sl = rows[pos:pos + m]
            sl["hsf"], sl["writer"], sl["template"], sl["folder"] = hsf, writer, template, k
            sl["field"] = f.encode()
            sl["entry"] = np.arange(m)
            sl["ascii"] = codes
            pos += m
        folders[k] = (hsf, writer, template, start, pos)
    rows["digit_index"] = -1
    rows["duplicate_of"] = -1
    digits = np.flatnonzero(rows["field"] == b"d")
    rows["digit_index"][digits] = np.arange(len(digits))
    return Plan(rows, folders)


def _plan_scaled(config: SynthConfig) -> Plan:
    fields = config.fields
    counts = _scaled_counts(config, fields)
    seqs = _field_sequences(config, counts, fields)
    folders_meta, per_folder = [], []
    for p in nt.PARTITION_ORDER:
        part = nt.PARTITIONS[p]
        rng = _rng(config, 12, p)
        present = [f for f in fields if (p, f) in counts]
        want = max(1, int(round(config.scale * nt.DIGIT_WRITERS[p])))
        n_w = max(1, min([want] + [counts[(p, f)] for f in present]))
        ids = np.sort(rng.choice(np.array(part.writer_ids), n_w, replace=False))
        templates = _templates(rng, n_w)
        if TWO_FORM_WRITER in ids and n_w < min(counts[(p, f)] for f in present):
            # Like the real writer 3951: two forms, two folders, consecutive in walk order.
            i = int(np.flatnonzero(ids == TWO_FORM_WRITER)[0])
            ids = np.insert(ids, i, TWO_FORM_WRITER)
            templates = np.insert(templates, i, 0)
            templates[i:i + 2] = _templates(_rng(config, 14), 2, distinct_sorted=True)
            n_w += 1
        sizes = {f: _writer_sizes(counts[(p, f)], n_w, rng) for f in present}
        cuts = {f: np.concatenate([[0], np.cumsum(sizes[f])]) for f in present}
        for i in range(n_w):
            folders_meta.append((p, int(ids[i]), int(templates[i])))
            per_folder.append({f: seqs[(p, f)][cuts[f][i]:cuts[f][i + 1]] for f in present})
    plan = _assemble(folders_meta, per_folder, fields)
    if "d" in fields:
        _place_duplicates(plan, _rng(config, 13))
    return plan


def _place_duplicates(plan: Plan, rng, n_dup: int = nt.DUPLICATE_DIGITS) -> None:
    """Mark ``n_dup`` later digits as copies of earlier ones (same writer folder and class)."""
    rows = plan.rows
    digits = np.flatnonzero(rows["field"] == b"d")
    if len(digits) < 2 * n_dup:
        raise ConfigError("scale too small for SD19's duplicated digits",
                          expected=f"at least {2 * n_dup} digits", found=f"{len(digits)}",
                          hint="use a larger --scale")
    used = set()
    pairs = []
    # Same folder, same class: like the three real ones.
    folder_ids = rng.permutation(np.unique(rows["folder"][digits]))
    for k in folder_ids.tolist():
        if len(pairs) == n_dup:
            break
        d = digits[rows["folder"][digits] == k]
        cls = rows["ascii"][d]
        vals, cnt = np.unique(cls, return_counts=True)
        ok = vals[cnt >= 2]
        if len(ok) == 0:
            continue
        c = rng.choice(ok)
        src, dst = np.sort(rng.choice(d[cls == c], 2, replace=False))
        pairs.append((int(src), int(dst)))
        used.update((int(src), int(dst)))
    # Tiny scales: any two digits of the same class, else relabel the copy.
    order = rng.permutation(digits)
    for r in order.tolist():
        if len(pairs) == n_dup:
            break
        if r in used:
            continue
        same = [s for s in digits.tolist() if s not in used and s != r
                and rows["ascii"][s] == rows["ascii"][r]]
        if not same:
            continue
        src, dst = sorted((same[0], r))
        pairs.append((src, dst))
        used.update((src, dst))
    free = [r for r in digits.tolist() if r not in used]
    while len(pairs) < n_dup:
        src, dst = sorted(free[:2])
        free = free[2:]
        rows["ascii"][dst] = rows["ascii"][src]
        pairs.append((src, dst))
    for src, dst in pairs:
        rows["duplicate_of"][dst] = src


def _plan_layout(config: SynthConfig) -> Plan:
    table = read_xnist_table(config.layout)
    where = os.fspath(config.layout)
    keep = np.ones(len(table), bool)
    if config.layout_partitions:
        keep &= np.isin(table[:, 1], np.asarray(config.layout_partitions))
    if config.layout_writers:
        keep &= np.isin(table[:, 2], np.asarray(config.layout_writers))
    rows_idx = np.flatnonzero(keep)
    t = table[rows_idx]
    if len(t) == 0:
        raise ConfigError("the layout selection is empty", path=where,
                          expected="partitions/writers present in the table",
                          found=f"partitions={config.layout_partitions} writers={config.layout_writers}")
    cls, hsf, writer, entry = t[:, 0], t[:, 1], t[:, 2], t[:, 3]
    bad = ~np.isin(hsf, nt.PARTITION_ORDER) | (cls < 0) | (cls > 9)
    if bad.any():
        r = int(rows_idx[np.argmax(bad)])
        raise FormatError("layout table row out of range", path=where,
                          expected="class 0-9 and partition in 0,1,2,3,4,6,7",
                          found=f"row {r}: {table[r].tolist()}")
    # A new writer folder starts where the writer changes or column 3 restarts.
    new = np.ones(len(t), bool)
    new[1:] = (writer[1:] != writer[:-1]) | (entry[1:] <= entry[:-1])
    starts = np.flatnonzero(new)
    sizes = np.diff(np.append(starts, len(t)))
    expect = np.arange(len(t)) - np.repeat(starts, sizes)
    if not (entry == expect).all():
        r = int(rows_idx[np.argmax(entry != expect)])
        raise FormatError("layout table column 3 does not count digits within a writer folder",
                          path=where, expected="0, 1, 2, ... restarting per folder",
                          found=f"row {r}: {table[r].tolist()}")
    f_hsf, f_writer = hsf[starts], writer[starts]
    rank = np.searchsorted(np.array(nt.PARTITION_ORDER), f_hsf)
    key = rank * 10000 + f_writer
    if (np.diff(key) < 0).any():
        k = int(np.argmax(np.diff(key) < 0)) + 1
        raise FormatError("layout table is not in SD19 walk order", path=where,
                          expected="partitions 0,1,2,3,4,6,7, writers ascending",
                          found=f"row {int(rows_idx[starts[k]])}: writer {f_writer[k]} after "
                                f"writer {f_writer[k - 1]}")
    # Template ids: drawn per folder; folders of one writer get distinct ids in walk order
    # so that sorting the folder names keeps the table's order.
    rng = _rng(config, 21)
    templates = np.zeros(len(starts), np.int64)
    uniq, first, count = np.unique(f_writer, return_index=True, return_counts=True)
    templates[:] = _templates(rng, len(starts))
    for w, i0, c in zip(uniq.tolist(), first.tolist(), count.tolist()):
        if c > 1:
            templates[i0:i0 + c] = _templates(rng, c, distinct_sorted=True)
    # Other fields: scaled published counts, spread over this layout's writers.
    others = "".join(f for f in config.fields if f != "d")
    n_writers = {p: len(np.unique(f_writer[f_hsf == p])) for p in nt.PARTITION_ORDER}
    factor = {p: n_writers[p] / nt.DIGIT_WRITERS[p] for p in nt.PARTITION_ORDER}
    counts = _scaled_counts(config, others, factor) if others else {}
    seqs = _field_sequences(config, counts, others) if others else {}
    sizes_other = {}
    for p in nt.PARTITION_ORDER:
        k = np.flatnonzero(f_hsf == p)
        prng = _rng(config, 22, p)
        for f in others:
            if counts.get((p, f), 0) > 0:
                cut = np.concatenate([[0], np.cumsum(_writer_sizes(counts[(p, f)], len(k), prng))])
                sizes_other[(p, f)] = dict(zip(k.tolist(), zip(cut[:-1], cut[1:])))
    folders_meta, per_folder = [], []
    codes = (0x30 + cls).astype(np.uint8)
    for k, (s, n) in enumerate(zip(starts.tolist(), sizes.tolist())):
        p = int(f_hsf[k])
        fc = {"d": codes[s:s + n]}
        for f in others:
            span = sizes_other.get((p, f), {}).get(k)
            if span is not None:
                fc[f] = seqs[(p, f)][span[0]:span[1]]
        folders_meta.append((p, int(f_writer[k]), int(templates[k])))
        per_folder.append(fc)
    plan = _assemble(folders_meta, per_folder, config.fields)
    # Duplicates where column 6 says (global NIST index of the earlier identical image).
    digit_rows = np.flatnonzero(plan.rows["field"] == b"d")
    global_index = t[:, 5]
    dup = np.flatnonzero(t[:, 6] != 0)
    for i in dup.tolist():
        src = np.flatnonzero(global_index == t[i, 6])
        if len(src) == 0:
            logger.warning("layout: duplicate of NIST digit #%d skipped (its original #%d is "
                           "outside the selected partitions/writers)", t[i, 5], t[i, 6])
            continue
        plan.rows["duplicate_of"][digit_rows[i]] = digit_rows[int(src[0])]
    return plan


def plan_sd19(config: SynthConfig) -> Plan:
    """Plan a synthetic SD19 (no pixels): every character's metadata in by_write walk order.

    Examples
    --------
    >>> plan = plan_sd19(SynthConfig(scale=0.001, fields="d"))
    >>> int((plan.rows["duplicate_of"] >= 0).sum())
    3
    """
    config.validate()
    return _plan_layout(config) if config.layout is not None else _plan_scaled(config)


# --------------------------------------------------------------------------------------------
# Rendering (worker processes)

def _render_job(job):
    """Render a group of writer folders; returns (blob, lengths, digests) of per-character payloads.

    Payload: the PNG (2nd edition) or ``zlib(packbits(image))`` (1st edition).
    """
    seed, edition, folders = job
    from .png1 import encode_png1

    blobs = []
    for writer, template, hsf, codes in folders:
        style = draw_writer_style(np.random.default_rng([seed, 1, writer]))
        rng = np.random.default_rng([seed, 2, writer, template, hsf])
        images = render_characters(codes, style, rng)
        if edition == 2:
            blobs.extend(encode_png1(im) for im in images)
        else:
            packed = np.packbits(images.reshape(len(images), -1), axis=1)
            blobs.extend(zlib.compress(row.tobytes(), 1) for row in packed)
    lengths = np.fromiter((len(b) for b in blobs), np.int64, len(blobs))
    # Payloads are a pure function of the pixels: equal digests <=> identical images.
    digests = b"".join(hashlib.blake2b(b, digest_size=16).digest() for b in blobs)
    return b"".join(blobs), lengths, digests


def _jobs(config: SynthConfig, plan: Plan, chunk: int):
    rows, folders = plan.rows, plan.folders
    batch, size = [], 0
    for f in folders:
        codes = rows["ascii"][f["start"]:f["stop"]].tobytes()
        batch.append((int(f["writer"]), int(f["template"]), int(f["hsf"]), codes))
        size += len(codes)
        if size >= chunk:
            yield (int(config.seed) & 0xFFFFFFFF, config.edition, batch)
            batch, size = [], 0
    if batch:
        yield (int(config.seed) & 0xFFFFFFFF, config.edition, batch)


class _Spill:
    """Per-character payloads in a flat temporary file, read back by row."""

    def __init__(self, path: Path, n: int):
        self.path = path
        self.offsets = np.zeros(n + 1, np.int64)
        self._f = open(path, "wb")
        self._n = 0
        self._map = None
        # Row -> row whose payload it shows (the three duplicates show their original's).
        self.alias = np.arange(n)

    def append(self, blob: bytes, lengths: np.ndarray) -> None:
        self._f.write(blob)
        k = len(lengths)
        self.offsets[self._n + 1:self._n + 1 + k] = self.offsets[self._n] + np.cumsum(lengths)
        self._n += k

    def finish(self) -> None:
        self._f.close()
        if self.offsets[-1]:
            with open(self.path, "rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    def __getitem__(self, row: int) -> bytes:
        row = self.alias[row]
        return self._map[self.offsets[row]:self.offsets[row + 1]]

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
        if not self._f.closed:
            self._f.close()
        self.path.unlink(missing_ok=True)


def _render_all(config: SynthConfig, plan: Plan, spill: _Spill, bar) -> None:
    n = len(plan)
    if config.workers:
        workers = config.workers
    else:
        workers = settings.workers()
    # Jobs group whole writer folders; how they are grouped does not change any byte.
    chunk = int(min(1000, max(50, n // (4 * workers))))
    jobs = _jobs(config, plan, chunk)
    if workers <= 1 or n < PARALLEL_MIN:
        results = map(_render_job, jobs)
        pool = None
    else:
        pool = concurrent.futures.ProcessPoolExecutor(max_workers=workers)
        # Bounded look-ahead keeps memory flat while both cores stay busy.
        results = _bounded_map(pool, _render_job, jobs, 4 * workers)
    try:
        done = 0
        digests = []
        for blob, lengths, dig in results:
            spill.append(blob, lengths)
            digests.append(dig)
            done += len(lengths)
            bar.update(len(lengths))
        if done != n:
            raise BuildError("synthetic SD19 rendering lost characters",
                             expected=f"{n} characters", found=f"{done}")
        _check_distinct(np.frombuffer(b"".join(digests), "S16"), plan)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)


def _check_distinct(digests: np.ndarray, plan: Plan) -> None:
    """Every rendered image must differ from every other (only the planned copies repeat)."""
    _, first, counts = np.unique(digests, return_index=True, return_counts=True)
    if (counts > 1).any():
        rows = plan.rows
        bad = first[counts > 1]
        desc = ", ".join(f"hsf_{rows['hsf'][r]} writer {rows['writer'][r]} field "
                         f"{rows['field'][r].decode()} entry {rows['entry'][r]} "
                         f"'{chr(rows['ascii'][r])}'" for r in bad[:5].tolist())
        raise BuildError("synthetic SD19 rendered identical images by accident",
                         expected="distinct images (the three planned duplicates are copied later)",
                         found=f"{int((counts - 1).sum())} repeats, e.g. {desc}",
                         hint="this is a bug in mnistforge.sd19.glyphs; try another --seed")


def _bounded_map(pool, fn, items, ahead: int):
    pending = []
    it = iter(items)
    for item in it:
        pending.append(pool.submit(fn, item))
        if len(pending) >= ahead:
            break
    while pending:
        fut = pending.pop(0)
        nxt = next(it, None)
        if nxt is not None:
            pending.append(pool.submit(fn, nxt))
        yield fut.result()


# --------------------------------------------------------------------------------------------
# Hierarchies: sets (former .mis files) and their members

def _folder_name(hsf, writer, template) -> str:
    return f"hsf_{hsf}/f{writer:04d}_{template:02d}"


def _sets(plan: Plan, hierarchy: str):
    """Yield (set path inside the hierarchy, rows) for every former ``.mis`` file, rows in walk order."""
    rows = plan.rows
    if hierarchy == "by_write":
        for k, f in enumerate(plan.folders):
            sl = np.arange(f["start"], f["stop"])
            fields = rows["field"][sl]
            for fl in nt.FIELDS:
                r = sl[fields == fl.encode()]
                if len(r):
                    folder = _folder_name(int(f["hsf"]), int(f["writer"]), int(f["template"]))
                    yield f"{folder}/{fl}{int(f['writer']):04d}_{int(f['template']):02d}", r
        return
    if hierarchy == "by_field":
        for p in nt.PARTITION_ORDER:
            for fl in nt.FIELDS:
                sel = np.flatnonzero((rows["hsf"] == p) & (rows["field"] == fl.encode()))
                codes = rows["ascii"][sel]
                for c in np.unique(codes).tolist():
                    yield f"hsf_{p}/{nt.FIELD_DIRS[fl]}/{nt.class_hex(c)}", sel[codes == c]
        return
    merged = hierarchy == "by_merge"
    codes = rows["ascii"].astype(np.int64)
    if merged:
        codes = np.array([nt.merge_class(c) for c in range(256)])[codes]
    for c in np.unique(codes).tolist():
        sel = np.flatnonzero(codes == c)
        name = nt.class_hex(c)
        if merged and chr(c) in nt.MERGED_LETTERS:
            name = f"{nt.class_hex(c)}_{nt.class_hex(ord(chr(c).lower()))}"
        hsf = rows["hsf"][sel]
        for p in nt.PARTITION_ORDER:
            r = sel[hsf == p]
            if len(r):
                yield f"{name}/hsf_{p}", r
        if not merged:
            r = sel[hsf != 4]    # NIST's suggested training set: every partition but hsf_4
            if len(r):
                yield f"{name}/train_{name}", r


def _by_write_paths(plan: Plan) -> np.ndarray:
    """For each row, its by_write ``.mis`` path relative to the by_write root (for ``.mit`` lines)."""
    paths = np.empty(len(plan), dtype=object)
    for set_path, r in _sets(plan, "by_write"):
        paths[r] = f"{set_path}.mis"
    return paths


def _strip_set(set_path: str) -> tuple[str, str]:
    """``'4a/hsf_0'`` -> parent folder ``'4a'`` and base name ``'hsf_0'``."""
    folder, base = set_path.rsplit("/", 1)
    return folder, base


class _Writer:
    """Writes members of one hierarchy into a zip (sorted names) or a folder."""

    def __init__(self, root: Path, hierarchy: str, packaging: str):
        self.packaging = packaging
        self.hierarchy = hierarchy
        self.members: list[tuple[str, object]] = []
        self.root = root

    def add(self, name: str, payload) -> None:
        """``payload``: bytes, or an int row of the spill (resolved at write time)."""
        self.members.append((f"{self.hierarchy}/{name}", payload))

    def write(self, spill: _Spill, bar) -> None:
        self.members.sort(key=lambda m: m[0])
        if self.packaging == "zip":
            self._write_zip(spill, bar)
        else:
            self._write_dir(spill, bar)

    def _data(self, payload, spill):
        return spill[payload] if isinstance(payload, (int, np.integer)) else payload

    def _write_zip(self, spill, bar) -> None:
        dirs = set()
        with _StoredZip(self.root / f"{self.hierarchy}.zip") as zf:
            for name, payload in self.members:
                # Directory entries first, as zip tools write them (readers must cope either way).
                parts = name.split("/")[:-1]
                for i in range(1, len(parts) + 1):
                    d = "/".join(parts[:i]) + "/"
                    if d not in dirs:
                        dirs.add(d)
                        zf.add(d, b"")
                zf.add(name, self._data(payload, spill))
                bar.update(1)

    def _write_dir(self, spill, bar) -> None:
        made = set()
        for name, payload in self.members:
            path = self.root / name
            if path.parent not in made:
                path.parent.mkdir(parents=True, exist_ok=True)
                made.add(path.parent)
            with open(path, "wb") as f:
                f.write(self._data(payload, spill))
            bar.update(1)


class _StoredZip:
    """A minimal, reproducible zip writer: stored members, fixed timestamps, ZIP64 end records.

    ``zipfile.ZipFile.writestr`` seeks back to patch every local header, which costs
    ~80 us a member; a synthetic SD19 has millions of members, so headers are written
    once here with the CRC computed up front.  The result is an ordinary zip that
    ``zipfile``, ``unzip`` and NIST-zip readers open (checked in the tests).
    """

    _DOS_DATE = ((ZIP_DATE[0] - 1980) << 9) | (ZIP_DATE[1] << 5) | ZIP_DATE[2]
    _DOS_TIME = (ZIP_DATE[3] << 11) | (ZIP_DATE[4] << 5) | (ZIP_DATE[5] // 2)

    def __init__(self, path: Path):
        self.path = path
        self._f = open(path, "wb")
        self._central = []
        self._pos = 0

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self._finish()
        self._f.close()

    def add(self, name: str, data: bytes) -> None:
        raw = name.encode("ascii")
        crc = zlib.crc32(data) & 0xFFFFFFFF
        size = len(data)
        if self._pos + size + 30 + len(raw) >= 0xFFFFFFFF or size >= 0xFFFFFFFF:
            raise ConfigError("synthetic zip would exceed 4 GiB", path=self.path,
                              expected="< 4 GiB per hierarchy zip", found=f"member {name}",
                              hint="use packaging='dir' for such a large output")
        is_dir = name.endswith("/")
        header = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, self._DOS_TIME, self._DOS_DATE,
                             crc, size, size, len(raw), 0)
        self._f.write(header)
        self._f.write(raw)
        self._f.write(data)
        attr = ((0o40755 << 16) | 0x10) if is_dir else (0o100644 << 16)
        self._central.append(struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, (3 << 8) | 20, 20, 0, 0, self._DOS_TIME,
            self._DOS_DATE, crc, size, size, len(raw), 0, 0, 0, 0, attr, self._pos) + raw)
        self._pos += len(header) + len(raw) + size

    def _finish(self) -> None:
        cd_offset = self._pos
        cd = b"".join(self._central)
        self._f.write(cd)
        n, cd_size = len(self._central), len(cd)
        if n >= 0xFFFF or cd_offset >= 0xFFFFFFFF or cd_size >= 0xFFFFFFFF:
            z64 = cd_offset + cd_size
            self._f.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, (3 << 8) | 45, 45, 0, 0,
                                      n, n, cd_size, cd_offset))
            self._f.write(struct.pack("<IIQI", 0x07064B50, 0, z64, 1))
            self._f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF,
                                      min(cd_size, 0xFFFFFFFF), min(cd_offset, 0xFFFFFFFF), 0))
        else:
            self._f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, cd_size, cd_offset, 0))


def _hierarchy_members(config: SynthConfig, plan: Plan, hierarchy: str, writer: _Writer,
                       spill: _Spill, mit_paths) -> None:
    from .ihead import format_cls, format_mit, write_mis

    rows = plan.rows
    for set_path, r in _sets(plan, hierarchy):
        _, base = _strip_set(set_path)
        if config.edition == 2:
            width = max(5, len(str(len(r) - 1)))
            for k, row in enumerate(r.tolist()):
                writer.add(f"{set_path}/{base}_{k:0{width}d}.png", row)
            if hierarchy == "by_write" and config.by_write_cls:
                writer.add(f"{set_path}.cls", format_cls(rows["ascii"][r]).encode("ascii"))
            continue
        images = np.empty((len(r), 128, 128), bool)
        for k, row in enumerate(r.tolist()):
            images[k] = np.unpackbits(np.frombuffer(zlib.decompress(spill[row]), np.uint8),
                                      count=128 * 128).reshape(128, 128).astype(bool)
        buf = io.BytesIO()
        write_mis(buf, images, id=f"{base}.mis")
        writer.add(f"{set_path}.mis", buf.getvalue())
        writer.add(f"{set_path}.cls", format_cls(rows["ascii"][r]).encode("ascii"))
        if hierarchy != "by_write":
            entries = zip(mit_paths[r].tolist(), rows["entry"][r].tolist())
            writer.add(f"{set_path}.mit", format_mit(entries).encode("ascii"))


# --------------------------------------------------------------------------------------------
# Entry points

def _describe(config: SynthConfig, plan: Plan) -> dict:
    rows = plan.rows
    counts = {}
    for p in nt.PARTITION_ORDER:
        sel = rows["hsf"] == p
        counts[f"hsf_{p}"] = {
            "writers": int(len(np.unique(rows["writer"][sel]))),
            "writer_folders": int((plan.folders["hsf"] == p).sum()),
            **{nt.FIELD_NAMES[f]: int((sel & (rows["field"] == f.encode())).sum()) for f in nt.FIELDS},
        }
    dups = np.flatnonzero(rows["duplicate_of"] >= 0)
    cfg = dataclasses.asdict(config)
    cfg["layout"] = None if config.layout is None else Path(config.layout).name
    cfg["hierarchies"] = list(config.hierarchies)
    for k in ("workers", "overwrite"):
        cfg.pop(k)
    return {
        "kind": "synthetic NIST SD19 (mnistforge synth-sd19)",
        "note": "Synthetic handwriting-like characters, not NIST data.",
        "config": cfg,
        "characters": int(len(rows)),
        "digits": int((rows["field"] == b"d").sum()),
        "partitions": counts,
        "duplicates": [{"row": int(r), "duplicate_of": int(rows["duplicate_of"][r]),
                        "digit_index": int(rows["digit_index"][r]),
                        "original_digit_index": int(rows["digit_index"][rows["duplicate_of"][r]])}
                       for r in dups],
    }


def synthesize_sd19(out, config: SynthConfig = SynthConfig(), progress=None) -> Path:
    """Write a synthetic SD19 into the new folder ``out`` (atomically) and return its path.

    ``out`` then holds ``by_write.zip``, ``by_class.zip``, ... (``packaging="zip"``) or
    ``by_write/``, ``by_class/``, ... (``"dir"``), plus ``synthetic-sd19.json``
    describing the configuration and counts.

    Parameters
    ----------
    out : path
        Output folder; must not exist unless ``config.overwrite``.
    config : SynthConfig
        What to write.
    progress : bool or None
        Progress bars: None = on a terminal only, True/False = force.

    Examples
    --------
    >>> import tempfile
    >>> p = synthesize_sd19(tempfile.mkdtemp() + "/s", SynthConfig(scale=0.0005, edition=1,
    ...                     packaging="dir", fields="d", hierarchies=("by_write",)))
    >>> sorted(q.name for q in (p / "by_write").iterdir())
    ['hsf_0', 'hsf_1', 'hsf_2', 'hsf_3', 'hsf_4', 'hsf_6', 'hsf_7']
    """
    config.validate()
    disable = None if progress is None else not progress
    plan = plan_sd19(config)
    out = Path(out)
    logger.info("synthesising SD19: %d characters, %d writer folders, edition %d, %s",
                len(plan), len(plan.folders), config.edition, config.packaging)
    with atomic_dir(out, overwrite=config.overwrite) as tmp:
        spill = _Spill(tmp / ".render.spill", len(plan))
        try:
            t0 = time.perf_counter()
            with _progress_bar(total=len(plan), desc="render", unit="char", disable=disable) as bar:
                _render_all(config, plan, spill, bar)
            spill.finish()
            logger.info("rendered and encoded %d characters in %.1f s", len(plan),
                        time.perf_counter() - t0)
            # Duplicates: the copy shows the original's payload (identical pixels).
            dup = np.flatnonzero(plan.rows["duplicate_of"] >= 0)
            spill.alias[dup] = plan.rows["duplicate_of"][dup]
            mit_paths = _by_write_paths(plan) if config.edition == 1 else None
            for hierarchy in config.hierarchies:
                t0 = time.perf_counter()
                w = _Writer(tmp, hierarchy, config.packaging)
                _hierarchy_members(config, plan, hierarchy, w, spill, mit_paths)
                with _progress_bar(total=len(w.members), desc=hierarchy, unit="file",
                                   disable=disable) as bar:
                    w.write(spill, bar)
                logger.info("wrote %s (%d files) in %.1f s", hierarchy, len(w.members),
                            time.perf_counter() - t0)
        finally:
            spill.close()
        with open(tmp / DESCRIPTION, "w") as f:
            json.dump(_describe(config, plan), f, indent=2, sort_keys=True)
            f.write("\n")
    return out


def make_tiny_sd19(tmp_path, scale: float = 0.002, edition: int = 2, packaging: str = "zip",
                   seed: int = 0, fields: str = "dulc", **kwargs) -> Path:
    """A small synthetic SD19 for tests (``scale=0.002``: ~1,600 characters, a few seconds).

    Written to ``tmp_path / "sd19-e<edition>-<packaging>-s<seed>-<fields>"`` (reused when it
    already exists, so several tests of a session can share it).

    Examples
    --------
    >>> import tempfile
    >>> p = make_tiny_sd19(tempfile.mkdtemp(), scale=0.0005, fields="d")
    >>> (p / "by_write.zip").is_file()
    True
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
