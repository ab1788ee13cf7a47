"""Entry point: plan, render and write a synthetic SD19 into an atomic output folder."""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from ...io.atomic import atomic_dir
from ...io.outputs import check_output_folder, unlisted_entries
from ...progress import progress as _progress_bar
from .. import nist_table as nt
from .config import DESCRIPTION, SynthConfig
from .plan import Plan, plan_sd19
from .render import _render_all, _Spill
from .write import _by_write_paths, _hierarchy_members, _Writer

logger = logging.getLogger(__name__)

# --- Entry points -----------------------------------------------------------------------------

def _describe(config: SynthConfig, plan: Plan) -> dict[str, Any]:
    rows = plan.rows
    counts: dict[str, dict[str, int]] = {}
    for p in nt.PARTITION_ORDER:
        sel = rows["hsf"] == p
        counts[f"hsf_{p}"] = {
            "writers": int(len(np.unique(rows["writer"][sel]))),
            "writer_folders": int((plan.folders["hsf"] == p).sum()),
            **{nt.FIELD_NAMES[f]: int((sel & (rows["field"] == f.encode())).sum()) for f in nt.FIELDS},
        }
    dups = np.flatnonzero(rows["duplicate_of"] >= 0)
    cfg = {k: v for k, v in dataclasses.asdict(config).items() if k not in ("workers", "overwrite")}
    cfg["layout"] = None if config.layout is None else Path(config.layout).name
    cfg["hierarchies"] = list(config.hierarchies)
    return {
        "kind": "synthetic NIST SD19 (mnistforge synth-sd19)",
        "note": "Synthetic handwriting-like characters, not NIST data.", "config": cfg,
        "characters": int(len(rows)), "digits": int((rows["field"] == b"d").sum()), "partitions": counts,
        "duplicates": [{"row": int(r), "duplicate_of": int(rows["duplicate_of"][r]),
                        "digit_index": int(rows["digit_index"][r]),
                        "original_digit_index": int(rows["digit_index"][rows["duplicate_of"][r]])} for r in dups],
    }


def synthesize_sd19(out: str | os.PathLike[str], config: SynthConfig = SynthConfig(),
                    progress: bool | None = None) -> Path:
    """Write a synthetic SD19 into the new folder ``out`` (atomically) and return its path.

    ``out`` then holds ``by_write.zip``, ``by_class.zip``, ... (``packaging="zip"``) or ``by_write/``, ``by_class/``,
    ... (``"dir"``), plus ``synthetic-sd19.json`` describing the configuration and counts.

    ``out``: Output folder; must not exist unless ``config.overwrite``.
    ``progress``: Progress bars: None = on a terminal only, True/False = force.

    >>> import tempfile
    >>> p = synthesize_sd19(tempfile.mkdtemp() + "/s", SynthConfig(scale=0.0005, edition=1,
    ...                     packaging="dir", fields="d", hierarchies=("by_write",)))
    >>> sorted(q.name for q in (p / "by_write").iterdir())
    ['hsf_0', 'hsf_1', 'hsf_2', 'hsf_3', 'hsf_4', 'hsf_6', 'hsf_7']
    """
    config.validate()
    disable = None if progress is None else not progress
    out = Path(out)
    # before any work: the output path, and what --overwrite would replace
    check_output_folder(out, inputs=[config.layout], overwrite=config.overwrite, owned=synthetic_sd19_problems)
    plan = plan_sd19(config)
    logger.info("synthesising SD19: %d characters, %d writer folders, edition %d, %s",
                len(plan), len(plan.folders), config.edition, config.packaging)
    with atomic_dir(out, overwrite=config.overwrite, inputs=[config.layout], owned=synthetic_sd19_problems) as tmp:
        spill = _Spill(tmp / ".render.spill", len(plan))
        try:
            t0 = time.perf_counter()
            with _progress_bar(total=len(plan), desc="render", unit="char", disable=disable) as bar:
                _render_all(config, plan, spill, bar)
            spill.finish()
            logger.info("rendered and encoded %d characters in %.1f s", len(plan), time.perf_counter() - t0)
            # Duplicates: the copy shows the original's payload (identical pixels).
            dup = np.flatnonzero(plan.rows["duplicate_of"] >= 0)
            spill.alias[dup] = plan.rows["duplicate_of"][dup]
            mit_paths = _by_write_paths(plan) if config.edition == 1 else None
            for hierarchy in config.hierarchies:
                t0 = time.perf_counter()
                w = _Writer(tmp, hierarchy, config.packaging)
                _hierarchy_members(config, plan, hierarchy, w, spill, mit_paths)
                with _progress_bar(total=len(w.members), desc=hierarchy, unit="file", disable=disable) as bar:
                    w.write(spill, bar)
                logger.info("wrote %s (%d files) in %.1f s", hierarchy, len(w.members), time.perf_counter() - t0)
        finally:
            spill.close()
        with open(tmp / DESCRIPTION, "w") as f:
            json.dump(dict(_describe(config, plan), outputs=_outputs(tmp)), f, indent=2, sort_keys=True)
            f.write("\n")
    return out


# --- What --overwrite may replace -------------------------------------------------------------

#: the SD19 index cache (and products) a read leaves in ``<source>/.mnistforge/`` (sd19/index.py, products.py)
_INDEX_CACHE = ".mnistforge"
_INDEX_FILE = re.compile(r"sd19-[A-Za-z0-9_-]+\.(npy|json)")   # the index and the products (sd19/products.py)


def _tree_size(folder: Path) -> tuple[int, int, list[Path]]:
    """(files, bytes, entries that are not regular files) under ``folder``."""
    files = size = 0
    odd = []
    for root, dirs, names in os.walk(folder):
        for n in names + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            p = Path(root, n)
            st = p.lstat()
            if p.is_symlink() or not p.is_file():
                odd.append(p)
            files += 1
            size += st.st_size
    return files, size, odd


def _outputs(folder: Path) -> dict[str, dict[str, int]]:
    """``{top-level name: {"bytes": n}}`` for files, ``{"files": n, "bytes": n}`` for folders."""
    out: dict[str, dict[str, int]] = {}
    for p in sorted(folder.iterdir()):
        if p.name.startswith(".") or p.name == DESCRIPTION:
            continue
        if p.is_dir():
            files, size, _ = _tree_size(p)
            out[p.name] = {"files": files, "bytes": size}
        else:
            out[p.name] = {"bytes": p.stat().st_size}
    return out


def synthetic_sd19_problems(folder: str | os.PathLike[str]) -> list[str]:
    """What ``--overwrite`` would destroy in ``folder`` beyond what ``synth-sd19`` wrote there: anything its
    ``synthetic-sd19.json`` (``outputs``) does not list, at the recorded sizes (the SD19 index cache a read leaves in
    ``.mnistforge/`` is the package's too).  Inside a hierarchy folder (``packaging="dir"``) files are counted; a file
    newer than the description is named."""
    folder = Path(folder)
    desc = folder / DESCRIPTION
    try:
        d = json.loads(desc.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return [f"{DESCRIPTION} (missing or unreadable: {e})"]
    outputs = d.get("outputs") if isinstance(d, dict) else None
    config = d.get("config") if isinstance(d, dict) else None
    if (outputs is None and isinstance(config, dict) and config.get("packaging") == "zip"
            and isinstance(config.get("hierarchies"), list)):
        # written before descriptions listed their outputs: the zips its configuration names
        outputs = {f"{h}.zip": {} for h in config["hierarchies"]}
    if not (isinstance(outputs, dict) and "mnistforge synth-sd19" in str(d.get("kind"))):
        return [f"{DESCRIPTION} (no kind or outputs fields: not a description mnistforge wrote)"]
    listed: dict[str, int | None] = {DESCRIPTION: None}
    trees = {}
    for name, entry in outputs.items():
        entry = entry if isinstance(entry, dict) else {}
        if "files" in entry:
            trees[str(name)] = entry
        else:
            listed[str(name)] = entry.get("bytes") if isinstance(entry.get("bytes"), int) else None
    cache = folder / _INDEX_CACHE
    if cache.is_dir() and not cache.is_symlink():
        listed.update({f"{_INDEX_CACHE}/{p.name}": None for p in cache.iterdir() if _INDEX_FILE.fullmatch(p.name)})
    problems = unlisted_entries(folder, listed, ignore=lambda rel: rel in trees, folders=[_INDEX_CACHE])
    written = desc.stat().st_mtime
    for name, entry in sorted(trees.items()):
        top = folder / name
        if top.is_symlink() or not top.is_dir():
            problems.append(f"{name} (not the folder recorded)" if os.path.lexists(top) else f"{name}/ (missing)")
            continue
        files, size, odd = _tree_size(top)
        problems += [f"{p.relative_to(folder)} (not a regular file)" for p in odd[:5]]
        if (files, size) != (entry.get("files"), entry.get("bytes")):
            newer = [str(p.relative_to(folder)) for p in sorted(top.rglob("*"))
                     if p.is_file() and p.stat().st_mtime > written][:5]
            problems.append(f"{name}/ ({files} files, {size} bytes; recorded {entry.get('files')}, "
                            f"{entry.get('bytes')}" + (f"; newer than {DESCRIPTION}: "
                                                       + ", ".join(newer) if newer else "") + ")")
    return problems
