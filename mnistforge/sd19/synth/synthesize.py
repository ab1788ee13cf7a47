"""Entry point: plan, render and write a synthetic SD19 into an atomic output folder."""
from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path

import numpy as np

from ...io.atomic import atomic_dir
from ...progress import progress as _progress_bar
from .. import nist_table as nt
from .config import DESCRIPTION, SynthConfig
from .plan import Plan, plan_sd19
from .render import _render_all, _Spill
from .write import _by_write_paths, _hierarchy_members, _Writer

logger = logging.getLogger(__name__)

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
    with atomic_dir(out, overwrite=config.overwrite, inputs=[config.layout],
                    owned=lambda p: (Path(p) / DESCRIPTION).is_file()) as tmp:
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
