"""FEMNIST checks: a ``build femnist`` folder or a LEAF JSON folder (``data/train``, ``data/test``).

What they report (docs/femnist.md): samples per writer (LEAF's users) and per class, images
held by more than one writer, images on both train and test (and how many of them are one
SD19 character LEAF's ``group_by_writer.py`` doubled), and the LEAF parameters the data was
made with: from the manifest, or read back from LEAF's file and folder names and ``meta/``.

>>> leaf_parameters_from_names(["all_data_0_niid_05_keep_0_train_9.json",
...                             "all_data_1_niid_05_keep_0_train_9.json"])
{'-s': 'niid', '--sf': 0.05, '-k': 0, '--tf': 0.9, '-t': 'sample'}
>>> leaf_parameters_from_names(["all_data_0_iid_01_1_train_9.json"])["--iu"]
0.01
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..io.leaf import read_leaf_folder
from ..io.manifest import Manifest
from ..io.similar import blake2b_image_digests
from ..io.types import StrPath
from .duplicates import groups_by_value
from .result import FAIL, INFO, PASS, WARN, CheckResult, VerifyReport, run_check

__all__ = ["is_leaf_folder", "leaf_parameters_from_names", "check_writers_and_classes", "check_shared_images",
           "check_cross_writer_duplicates", "femnist_build_checks", "verify_leaf_folder"]

_NAME = re.compile(r"^all_data_(\d+)(?:_(iid)_(\d+)_(\d+)|_(niid)_(\d+))?(?:_keep_(\d+))?"
                   r"(?:_(train|test)_(\d+))?\.json$")


def _frac(digits: str) -> float:
    return float("0." + digits) if digits != "0" else 1.0


def leaf_parameters_from_names(names: Iterable[str]) -> dict[str, Any]:
    """LEAF's options as its file names record them (sample.py, remove_users.py, split_data.py). ``-t`` is ``user``
    when one train file stands for several all_data files (split_data.py writes a single file by user), else
    ``sample``; seeds are not in the names (``meta/``)."""
    out: dict[str, Any] = {}
    indices = set()
    for n in names:
        m = _NAME.match(Path(n).name)
        if not m:
            continue
        indices.add(int(m[1]))
        if m[2]:
            out.update({"-s": "iid", "--iu": _frac(m[3]), "--sf": _frac(m[4])})
        elif m[5]:
            out.update({"-s": "niid", "--sf": _frac(m[6])})
        if m[7] is not None:
            out["-k"] = int(m[7])
        if m[9] is not None:
            out["--tf"] = _frac(m[9])
    if "--tf" in out:
        out["-t"] = "sample" if len(indices) > 1 else "sample or user"
    return out


def is_leaf_folder(path: StrPath) -> bool:
    """A folder holding LEAF's ``train``/``test``/``all_data`` JSON folders (or under ``data/``)."""
    p = Path(path)
    if not p.is_dir():
        return False
    base = p / "data" if (p / "data").is_dir() else p
    return any((base / s).is_dir() and any((base / s).glob("*.json")) for s in ("train", "test", "all_data"))


def _digests(images: npt.ArrayLike) -> np.ndarray:
    return blake2b_image_digests(np.asarray(images, np.uint8))


def check_writers_and_classes(users: npt.ArrayLike, labels: npt.ArrayLike, split: str,
                              n_classes: int = 62) -> CheckResult:
    """Samples per writer and per class of one split (info: the figures LEAF's stats.sh gives)."""
    users = np.asarray(users)
    labels = np.asarray(labels, np.int64)
    names, per_user = np.unique(users, return_counts=True)
    per_class = np.bincount(labels, minlength=n_classes)
    values = {"writers": int(len(names)), "samples": int(len(labels)),
              "per_writer": {"min": int(per_user.min()) if len(per_user) else 0,
                             "median": float(np.median(per_user)) if len(per_user) else 0,
                             "max": int(per_user.max()) if len(per_user) else 0,
                             "mean": float(per_user.mean()) if len(per_user) else 0,
                             "std": float(per_user.std()) if len(per_user) else 0},
              "per_class": per_class.tolist(),
              "classes_present": int((per_class > 0).sum()),
              "counts": {str(k): int(v) for k, v in zip(names.tolist(), per_user.tolist())}}
    return CheckResult(f"femnist.writers[{split}]", INFO, values,
                       f"{len(names)} writers, {len(labels)} samples, "
                       f"{values['per_writer']['mean']:.1f} +- {values['per_writer']['std']:.1f} "
                       f"a writer; {values['classes_present']} of {n_classes} classes")


def check_cross_writer_duplicates(images: npt.ArrayLike, users: npt.ArrayLike, split: str) -> CheckResult:
    """Identical images held by more than one writer (a warning: LEAF never checks)."""
    users = np.asarray(users)
    holders = (sorted(set(users[g].tolist())) for g in groups_by_value(_digests(images)))
    shared = [who for who in holders if len(who) > 1]
    values = {"images_in_several_writers": len(shared), "examples": shared[:5]}
    if shared:
        return CheckResult(f"femnist.duplicates.writers[{split}]", WARN, values,
                           f"{len(shared)} images held by more than one writer (e.g. {shared[0]})")
    return CheckResult(f"femnist.duplicates.writers[{split}]", PASS, values, "no image is held by two writers")


def check_shared_images(train: npt.ArrayLike, test: npt.ArrayLike, train_rows: npt.ArrayLike | None = None,
                        test_rows: npt.ArrayLike | None = None) -> CheckResult:
    """Images both in train and test; with SD19 rows, those that are one character twice
    (LEAF's doubled first image of a writer, split to both sides)."""
    a, b = _digests(train), _digests(test)
    shared = np.isin(b, a)
    n = int(shared.sum())
    values: dict[str, Any] = {"test_images_in_train": n}
    msg = f"{n} test images also in train"
    if train_rows is not None and test_rows is not None:
        same = int(np.isin(np.asarray(test_rows)[shared], np.asarray(train_rows)).sum())
        values["same_sd19_character"] = same
        msg += f" ({same} of them the same SD19 character: LEAF's doubled first image)" if n else ""
    if n:
        return CheckResult("femnist.train-test", WARN, values, msg)
    return CheckResult("femnist.train-test", PASS, values, "no test image is in train")


def femnist_build_checks(manifest: Manifest | None, loaded: dict[str, Any], add: Callable[[CheckResult], None]) -> None:
    """The FEMNIST checks of a build folder (``verify`` adds them for dataset ``femnist``)."""
    params = dict(manifest.parameters) if manifest is not None else {}
    leaf = params.get("leaf", {})
    add(CheckResult("femnist.parameters", INFO, {"leaf": leaf, "layout": params.get("layout"),
                                                 "pillow": params.get("pillow")},
                    "made with LEAF's " + " ".join(f"{k} {v}" for k, v in leaf.items()
                                                   if k.startswith("-")) if leaf else
                    "no LEAF parameters recorded"))
    counts = params.get("writer_counts", {})
    for s, ds in loaded.items():
        md = ds.metadata
        if md is None or "writer_id" not in (md.dtype.names or ()):
            continue
        users = md["writer_id"]
        r = run_check(f"femnist.writers[{s}]", check_writers_and_classes, users, ds.labels, s)
        if counts.get(s) is not None:
            want = sorted(counts[s].values())
            got = sorted(np.unique(users, return_counts=True)[1].tolist())
            if want != got:
                r = CheckResult(r.name, FAIL, dict(r.values, manifest=len(want)),
                                "samples per writer differ from the manifest's writer_counts")
        add(r)
        add(run_check(f"femnist.duplicates.writers[{s}]", check_cross_writer_duplicates, ds.images, users, s))
    if "train" in loaded and "test" in loaded:
        tr, te = loaded["train"].metadata, loaded["test"].metadata
        rows = (tr["sd19_row"], te["sd19_row"]) if tr is not None and te is not None else (None, None)
        add(run_check("femnist.train-test", check_shared_images, loaded["train"].images, loaded["test"].images, *rows))


def verify_leaf_folder(path: StrPath, *, strict: bool = False) -> VerifyReport:
    """``verify`` on a LEAF JSON folder (LEAF's ``data/`` or the folder above it)."""
    path = Path(path)
    results: list[CheckResult] = []
    add = results.append
    data = read_leaf_folder(path)
    names = [n for files in data.values() for n in files]
    params = leaf_parameters_from_names(names)
    for seed_file, flag in (("sampling_seed.txt", "--smplseed"), ("split_seed.txt", "--spltseed")):
        p = next((d / "meta" / seed_file for d in (path, path.parent) if (d / "meta" / seed_file).is_file()), None)
        if p is not None:
            lines = [x for x in p.read_text().splitlines() if x.strip() and not x.startswith("#")]
            if lines:
                params[flag] = int(lines[-1])
    if "train" in data and len(data["train"]) == 1 and len(data.get("all_data", {})) > 1:
        params["-t"] = "user"
    add(CheckResult("femnist.parameters", INFO, {"leaf": params, "files": names},
                    "made with LEAF's " + " ".join(f"{k} {v}" for k, v in params.items())))
    splits = {}
    for s in ("all_data", "train", "test"):
        if s not in data:
            continue
        users, ys, xs = [], [], []
        for d in data[s].values():
            for u in d["users"]:
                users += [u] * len(d["y"][u])
                ys.append(d["y"][u])
                xs.append(d["x"][u])
        x = np.concatenate(xs) if xs else np.zeros((0, 784))
        px = np.rint(np.asarray(x) * 255).astype(np.uint8).reshape(len(x), 28, 28)
        y = np.concatenate(ys) if ys else np.zeros(0, np.int64)
        splits[s] = (users, y, px)
        add(check_writers_and_classes(users, y, s))
        add(check_cross_writer_duplicates(px, users, s))
    if "train" in splits and "test" in splits:
        add(check_shared_images(splits["train"][2], splits["test"][2]))
        tr, te = set(splits["train"][0]), set(splits["test"][0])
        add(CheckResult("femnist.writers.train-test", INFO, {"train": len(tr), "test": len(te), "both": len(tr & te)},
                        f"{len(tr)} writers in train, {len(te)} in test, {len(tr & te)} in both"))
    return VerifyReport(str(path), results, strict=strict,
                        info={"dataset": "femnist", "root": str(path), "source": "LEAF JSON folder"})
