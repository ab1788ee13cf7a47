"""LEAF's FEMNIST recipe (``TalwalkarLab/leaf``, ``data/femnist/`` and ``data/utils/``) on row lists.

Every step of LEAF's scripts is transcribed here on SD19 index rows instead of pixel lists, with Python's
``random.Random`` called in the same sequence (so a seed gives LEAF's choice).  Where LEAF depends on the file system's
listing order, the order used is the sorted one (documented in ``docs/femnist.md``).

A "file" is what LEAF writes as one JSON file: its name and its users in order, each with the list of rows LEAF's
``user_data[u]`` holds.

>>> relabel(0x30), relabel(0x41), relabel(0x7a)
(0, 10, 61)
>>> frac_label(0.05), frac_label(1.0), frac_label(0.1)
('05', '0', '1')
>>> [len(g) for g in iid_divide(list(range(7)), 3)]
[2, 2, 3]
"""
from __future__ import annotations

import dataclasses
import random
from typing import Any, Mapping

import numpy as np

from ..errors import BuildError, ConfigError

__all__ = ["MAX_WRITERS", "LeafFile", "LeafOptions", "relabel", "frac_label", "iid_divide",
           "leaf_order", "leaf_classes", "all_data", "sample", "remove_users", "split",
           "run_recipe", "PAPER_SAMPLING_SEED", "PAPER_SPLIT_SEED"]

#: data_to_json.py: writers per all_data_K.json
MAX_WRITERS = 100
#: paper_experiments/femnist.sh: the seeds of the LEAF paper's FEMNIST runs
PAPER_SAMPLING_SEED = 1549786595
PAPER_SPLIT_SEED = 1549786796


@dataclasses.dataclass
class LeafFile:
    """One LEAF JSON file: name, users in order, the rows of each user."""

    name: str
    users: list[str]
    rows: dict[str, list[int]]

    @property
    def num_samples(self) -> list[int]:
        return [len(self.rows[u]) for u in self.users]


@dataclasses.dataclass(frozen=True)
class LeafOptions:
    """preprocess.sh's options (None: that step is not run, as when the flag is absent)."""

    sample: str | None = "niid"       # -s iid|niid
    fraction: float = 1.0             # --sf
    iid_users: float = 0.01           # --iu
    min_samples: int | None = 0       # -k
    split: str | None = "sample"      # -t sample|user
    train_fraction: float = 0.9       # --tf
    sampling_seed: int = PAPER_SAMPLING_SEED   # --smplseed
    split_seed: int = PAPER_SPLIT_SEED         # --spltseed
    repeat_first: bool = True         # group_by_writer.py's doubled first image (see docs)


def relabel(ascii_code: int) -> int:
    """data_to_json.py ``relabel_class``: 0-9 digits, 10-35 upper, 36-61 lower."""
    a = int(ascii_code)
    if a < 0x3A:
        return a - 0x30
    return a - 55 if a <= 90 else a - 61


def frac_label(f: float) -> str:
    """LEAF's file-name label of a fraction: ``str(f)[2:]``."""
    return str(float(f))[2:]


def iid_divide(items: list[int], g: int) -> list[list[int]]:
    """util.py ``iid_divide``: ``g`` groups, the small ones first."""
    n = len(items)
    size = int(n / g)
    big = n - g * size
    small = g - big
    out = [items[size * i:size * (i + 1)] for i in range(small)]
    bi = size * small
    size += 1
    out += [items[bi + size * i:bi + size * (i + 1)] for i in range(big)]
    return out


def leaf_order(index: np.ndarray | Mapping[str, Any]) -> np.ndarray:
    """Rows in get_file_dirs.py's by_write walk with every listing sorted.

    Partitions ``hsf_N``, writer folders ``fWWWW_TT``, field folders (sorted: c, d, l, u), PNG names ``..._NNNNN.png``
    (zero-padded: numeric order).
    """
    field = np.asarray(index["field"]).view(np.uint8).astype(np.int64)
    return np.lexsort((index["entry"], field, index["template"], index["writer"], index["hsf"]))


def leaf_classes(index: np.ndarray | Mapping[str, Any]) -> np.ndarray:
    """match_hashes.py: each by_write character's class from the first by_class file with its MD5 (first in sorted
    listing: the lowest class folder), for identical images too."""
    asc = np.asarray(index["ascii"]).astype(np.int64)
    if (asc == 0).any():
        bad = np.flatnonzero(asc == 0)
        raise BuildError("SD19 characters without a class", expected="every by_write character "
                         "with a by_class partner (LEAF's match_hashes.py fails otherwise)",
                         found=f"{len(bad)} rows without a class (first {bad[:5].tolist()})",
                         hint="add by_class.zip to the source (or the .cls files)")
    dup = np.asarray(index["duplicate_of"]).astype(np.int64)
    rows = np.flatnonzero(dup >= 0)
    if len(rows):
        first = dup[rows]
        low = asc.copy()
        np.minimum.at(low, first, asc[rows])   # lowest class of each group of identical images
        asc[rows] = low[first]
        asc[np.unique(first)] = low[np.unique(first)]
    return asc


def all_data(index: np.ndarray | Mapping[str, Any], repeat_first: bool = True) -> list[LeafFile]:
    """group_by_writer.py + data_to_json.py: ``all_data_K.json`` files of 100 writers."""
    order = leaf_order(index)
    w = np.asarray(index["writer"])[order].astype(np.int64)
    t = np.asarray(index["template"])[order].astype(np.int64)
    h = np.asarray(index["hsf"])[order].astype(np.int64)
    key = (h * 10000 + w) * 100 + t
    cut = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    bounds = np.r_[cut, len(order)]
    writers = []
    for i, s in enumerate(cut.tolist()):
        rows = order[s:bounds[i + 1]].tolist()
        if repeat_first and i > 0:
            rows = rows[:1] + rows     # group_by_writer.py appends the first image twice
        writers.append((f"f{int(w[s]):04d}_{int(t[s]):02d}", rows))   # the writer folder's name
    files = []
    for k in range(0, len(writers), MAX_WRITERS):
        part = writers[k:k + MAX_WRITERS]
        files.append(LeafFile(f"all_data_{k // MAX_WRITERS}.json", [u for u, _ in part], {u: r for u, r in part}))
    return files


def sample(files: list[LeafFile], opts: LeafOptions) -> list[LeafFile]:
    """sample.py (one ``random.Random(seed)`` over the files in order)."""
    rng = random.Random(opts.sampling_seed)
    out, new_user_count = [], 0
    iid = opts.sample == "iid"
    label = frac_label(opts.fraction)
    if iid:
        label = f"{frac_label(opts.iid_users)}_{label}"
    for f in files:
        tot = sum(f.num_samples)
        num_new = int(opts.fraction * tot)
        if iid:
            flat = [r for u in f.users for r in f.rows[u]]
            n_users = int(round(opts.iid_users * len(f.users))) or 1
            picked = rng.sample(range(tot), num_new)
            users = [str(i + new_user_count) for i in range(n_users)]
            groups = iid_divide([flat[i] for i in picked], n_users)
            rows = {u: g for u, g in zip(users, groups)}
            new_user_count += n_users
        else:
            users_all = list(f.users)
            rng.shuffle(users_all)
            ctot, i, rows, users = 0, 0, {}, []
            while ctot < num_new:
                u = users_all[i]
                r = f.rows[u]
                c = len(r)
                if ctot + c > num_new:
                    c = num_new - ctot
                    r = [r[j] for j in rng.sample(range(c), c)]
                rows[u] = r
                users.append(u)
                ctot += c
                i += 1
        out.append(LeafFile(f"{f.name[:-5]}_{'iid' if iid else 'niid'}_{label}.json", users, rows))
    return out


def remove_users(files: list[LeafFile], k: int) -> list[LeafFile]:
    """remove_users.py: users with fewer than ``k`` samples dropped."""
    out = []
    for f in files:
        users = [u for u in f.users if len(f.rows[u]) >= k]
        out.append(LeafFile(f"{f.name[:-5]}_keep_{int(k)}.json", users, {u: f.rows[u] for u in users}))
    return out


def split(files: list[LeafFile], opts: LeafOptions) -> tuple[list[LeafFile], list[LeafFile]]:
    """split_data.py: (train files, test files)."""
    rng = random.Random(opts.split_seed)
    label = frac_label(opts.train_fraction)
    frac = opts.train_fraction
    if opts.split == "user":
        user_files = [(u, f) for f in files for u in f.users]
        n = len(user_files)
        picked = set(rng.sample(range(n), int(frac * n)))
        sides = []
        for which, members in (("train", [x for i, x in enumerate(user_files) if i in picked]),
                               ("test", [x for i, x in enumerate(user_files) if i not in picked])):
            if not members:
                raise ConfigError(f"LEAF's user split leaves no {which} users",
                                  expected="users on both sides", found=f"{n} users, --tf {frac}",
                                  hint="change --tf or sample more data (nothing was written)")
            last = members[-1][1].name      # create_jsons_for names the one file after the last
            num_i = last.find("data") + 5
            rest = last[num_i:]
            p = rest.find("_")
            tail = rest[p:] if p != -1 else ".json"
            nf = f"{last[:num_i - 1]}_0{tail}"
            users = [u for u, _ in members]
            sides.append([LeafFile(f"{nf[:-5]}_{which}_{label}.json", users, {u: f.rows[u] for u, f in members})])
        return sides[0], sides[1]
    train, test = [], []
    for f in files:
        users, tr, te = [], {}, {}
        for u in f.users:
            r = f.rows[u]
            n = len(r)
            if n < 2:
                continue
            ntrain = 1 if n == 2 else max(1, int(frac * n))
            chosen = set(rng.sample(range(n), ntrain))
            if len(chosen) >= 1 and n - len(chosen) >= 1:
                users.append(u)
                tr[u] = [r[j] for j in range(n) if j in chosen]
                te[u] = [r[j] for j in range(n) if j not in chosen]
        train.append(LeafFile(f"{f.name[:-5]}_train_{label}.json", users, tr))
        test.append(LeafFile(f"{f.name[:-5]}_test_{label}.json", list(users), te))
    return train, test


def run_recipe(index: np.ndarray | Mapping[str, Any], opts: LeafOptions) -> dict[str, list[LeafFile]]:
    """preprocess.sh: ``{"all_data": files, "train": files, "test": files}`` (train/test
    only when a split is asked for; the sampled/kept stages too, under their folder names)."""
    stages: dict[str, list[LeafFile]] = {"all_data": all_data(index, opts.repeat_first)}
    cur = stages["all_data"]
    if opts.sample is not None:
        cur = stages["sampled_data"] = sample(cur, opts)
    if opts.min_samples is not None:
        cur = stages["rem_user_data"] = remove_users(cur, opts.min_samples)
    if opts.split is not None:
        stages["train"], stages["test"] = split(cur, opts)
    else:
        stages["final"] = cur
    return stages
