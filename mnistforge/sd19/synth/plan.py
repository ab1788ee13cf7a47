"""Planning the synthetic SD19: one row per character in by_write walk order.

Counts per partition and class, writers and their templates, the three duplicates, or an xnist layout.
"""
from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from ...errors import ConfigError, FormatError, MissingFileError
from ...io.compression import open_reader
from .. import nist_table as nt
from .config import _SPREAD, PLAN_DTYPE, TEMPLATES, TWO_FORM_WRITER, SynthConfig

logger = logging.getLogger(__name__)

# --- Class proportions per field --------------------------------------------------------------

def _apportion(total: int, weights: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Integers proportional to ``weights`` summing exactly to ``total`` (largest remainder)."""
    w = np.asarray(weights, dtype=np.float64)
    if total <= 0 or w.sum() <= 0:
        return np.zeros(len(w), dtype=np.int64)
    exact = w / w.sum() * total
    out: npt.NDArray[np.int64] = np.floor(exact).astype(np.int64)
    if rest := int(total - out.sum()):
        order = np.lexsort((np.arange(len(w)), -(exact - out)))  # ties: lowest index first
        out[order[:rest]] += 1
    return out


def _water_fill(totals: npt.ArrayLike, amount: int) -> npt.NDArray[np.int64]:
    """Integer ``x <= totals`` with ``sum(x) == amount``, as equal as the caps allow."""
    totals = np.asarray(totals, dtype=np.int64)
    lo, hi = 0, int(totals.max())
    while lo < hi:                       # largest level q with sum(min(totals, q)) <= amount
        q = (lo + hi + 1) // 2
        if np.minimum(totals, q).sum() <= amount:
            lo = q
        else:
            hi = q - 1
    x: npt.NDArray[np.int64] = np.minimum(totals, lo)
    rest = amount - int(x.sum())
    room = np.flatnonzero(x < totals)
    x[room[:rest]] += 1
    return x


def field_class_counts() -> dict[str, dict[int, int]]:
    """NIST's class totals split over the fields, at full scale.

    NIST publishes per-class totals over all fields and per-field totals per partition, not the cross table.  Model:
    every writer prints each letter about once in the upper and lower boxes, so the ``u`` (``l``) field takes each
    letter's total up to a common level that makes the published field total, and the constitution field takes the rest
    (hence its many O, S, e, t, ...). Digits are all in ``d``.

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
        "d": {c: nt.CLASS_TOTALS[c] for c in nt.DIGITS}, "u": dict(zip(nt.UPPERS, u.tolist())),
        "l": dict(zip(nt.LOWERS, lo.tolist())), "c": {**dict(zip(nt.UPPERS, (upper - u).tolist())),
              **dict(zip(nt.LOWERS, (lower - lo).tolist()))},
    }


# --- The xnist table --------------------------------------------------------------------------

def read_xnist_table(path: str | os.PathLike[str]) -> npt.NDArray[np.int64]:
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
                          expected=f"8 integer columns per row ({len(table)} rows)", found=f"{lines} lines")
    return table


# --- Planning: one row per character, in by_write walk order ----------------------------------

@dataclasses.dataclass
class Plan:
    """The layout of a synthetic SD19 before any pixel is drawn.

    ``rows`` (:data:`PLAN_DTYPE`) lists every character in by_write walk order (partitions 0,1,2,3,4,6,7; writer folders
    by name; fields d,u,l,c; entries in file order), which is the order of the readers' index.  ``folders`` holds one
    row per writer folder: ``hsf``, ``writer``, ``template``, ``start``, ``stop``.
    """

    rows: np.ndarray
    folders: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)


_FOLDER_DTYPE = np.dtype([("hsf", "u1"), ("writer", "i2"), ("template", "u1"), ("start", "i8"), ("stop", "i8")])


def _rng(config: SynthConfig, *key: int) -> np.random.Generator:
    return np.random.default_rng([int(config.seed) & 0xFFFFFFFF, *key])


def _writer_sizes(total: int, n: int, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """Split ``total`` characters over ``n`` writers, >= 1 each when possible, varied sizes."""
    if n == 0:
        return np.zeros(0, np.int64)
    base = 1 if total >= n else 0
    share = rng.dirichlet(np.full(n, _SPREAD))
    sizes: npt.NDArray[np.int64] = base + rng.multinomial(total - base * n, share)
    return sizes


def _templates(rng: np.random.Generator, n: int, distinct_sorted: bool = False) -> npt.NDArray[np.int64]:
    if distinct_sorted:
        picked: npt.NDArray[np.int64] = np.sort(rng.choice(TEMPLATES, n, replace=False))
        return picked
    return rng.integers(0, TEMPLATES, n)


def _field_sequences(config: SynthConfig, counts: dict[tuple[int, str], int],
                     fields: str) -> dict[tuple[int, str], npt.NDArray[np.uint8]]:
    """Class sequence per (partition, field): exact class totals, shuffled, cut by partition."""
    rng = _rng(config, 11)
    props = field_class_counts()
    out: dict[tuple[int, str], npt.NDArray[np.uint8]] = {}
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


def _scaled_counts(config: SynthConfig, fields: str,
                   factor: dict[int, float] | None = None) -> dict[tuple[int, str], int]:
    counts: dict[tuple[int, str], int] = {}
    for p in nt.PARTITION_ORDER:
        part = nt.PARTITIONS[p]
        for f in fields:
            n = part.count(f)
            if n == 0:
                continue
            k = config.scale * n * (factor[p] if factor is not None else 1.0)
            counts[(p, f)] = int(round(k)) if factor is not None else max(1, int(round(k)))
    return counts


def _assemble(folders_meta: Sequence[tuple[int, int, int]], per_folder_codes: Sequence[dict[str, np.ndarray]],
              fields: str) -> Plan:
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
    folders_meta: list[tuple[int, int, int]] = []
    per_folder: list[dict[str, np.ndarray]] = []
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


def _place_duplicates(plan: Plan, rng: np.random.Generator, n_dup: int = nt.DUPLICATE_DIGITS) -> None:
    """Mark ``n_dup`` later digits as copies of earlier ones (same writer folder and class)."""
    rows = plan.rows
    digits = np.flatnonzero(rows["field"] == b"d")
    if len(digits) < 2 * n_dup:
        raise ConfigError("scale too small for SD19's duplicated digits", expected=f"at least {2 * n_dup} digits",
                          found=f"{len(digits)}", hint="use a larger --scale")
    used: set[int] = set()
    pairs: list[tuple[int, int]] = []
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
        same = [s for s in digits.tolist() if s not in used and s != r and rows["ascii"][s] == rows["ascii"][r]]
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
    assert config.layout is not None  # plan_sd19 plans from a layout only when there is one
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
                          expected="class 0-9 and partition in 0,1,2,3,4,6,7", found=f"row {r}: {table[r].tolist()}")
    # A new writer folder starts where the writer changes or column 3 restarts.
    new = np.ones(len(t), bool)
    new[1:] = (writer[1:] != writer[:-1]) | (entry[1:] <= entry[:-1])
    starts = np.flatnonzero(new)
    sizes = np.diff(np.append(starts, len(t)))
    expect = np.arange(len(t)) - np.repeat(starts, sizes)
    if not (entry == expect).all():
        r = int(rows_idx[np.argmax(entry != expect)])
        raise FormatError("layout table column 3 does not count digits within a writer folder", path=where,
                          expected="0, 1, 2, ... restarting per folder", found=f"row {r}: {table[r].tolist()}")
    f_hsf, f_writer = hsf[starts], writer[starts]
    rank = np.searchsorted(np.array(nt.PARTITION_ORDER), f_hsf)
    key = rank * 10000 + f_writer
    if (np.diff(key) < 0).any():
        k = int(np.argmax(np.diff(key) < 0)) + 1
        raise FormatError("layout table is not in SD19 walk order", path=where,
                          expected="partitions 0,1,2,3,4,6,7, writers ascending",
                          found=f"row {int(rows_idx[starts[k]])}: writer {f_writer[k]} after writer {f_writer[k - 1]}")
    # Template ids: drawn per folder; folders of one writer get distinct ids in walk order
    # so that sorting the folder names keeps the table's order.
    rng = _rng(config, 21)
    uniq, first, count = np.unique(f_writer, return_index=True, return_counts=True)
    templates = _templates(rng, len(starts))
    for w, i0, c in zip(uniq.tolist(), first.tolist(), count.tolist()):
        if c > 1:
            templates[i0:i0 + c] = _templates(rng, c, distinct_sorted=True)
    # Other fields: scaled published counts, spread over this layout's writers.
    others = "".join(f for f in config.fields if f != "d")
    n_writers = {p: len(np.unique(f_writer[f_hsf == p])) for p in nt.PARTITION_ORDER}
    factor = {p: n_writers[p] / nt.DIGIT_WRITERS[p] for p in nt.PARTITION_ORDER}
    counts = _scaled_counts(config, others, factor) if others else {}
    seqs = _field_sequences(config, counts, others) if others else {}
    sizes_other: dict[tuple[int, str], dict[int, tuple[Any, Any]]] = {}
    for p in nt.PARTITION_ORDER:
        in_p = np.flatnonzero(f_hsf == p)
        prng = _rng(config, 22, p)
        for f in others:
            if counts.get((p, f), 0) > 0:
                cut = np.concatenate([[0], np.cumsum(_writer_sizes(counts[(p, f)], len(in_p), prng))])
                sizes_other[(p, f)] = dict(zip(in_p.tolist(), zip(cut[:-1], cut[1:])))
    folders_meta: list[tuple[int, int, int]] = []
    per_folder: list[dict[str, np.ndarray]] = []
    codes = (0x30 + cls).astype(np.uint8)
    for k, (s, n) in enumerate(zip(starts.tolist(), sizes.tolist())):
        p = int(f_hsf[k])
        fc = {"d": codes[s:s + n]}
        for f in others:
            if (span := sizes_other.get((p, f), {}).get(k)) is not None:
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

    >>> plan = plan_sd19(SynthConfig(scale=0.001, fields="d"))
    >>> int((plan.rows["duplicate_of"] >= 0).sum())
    3
    """
    config.validate()
    return _plan_layout(config) if config.layout is not None else _plan_scaled(config)
