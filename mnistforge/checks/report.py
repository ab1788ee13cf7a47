"""One-page HTML report of a verification: the table and a few pictures (Pillow only).

``write_report(report, out_dir)`` writes ``index.html``, ``report.json`` and one PNG per check that kept
example images (worst reference matches, duplicates found): each row shows the two images side by side and
their absolute difference, magnified.

>>> import tempfile, numpy as np
>>> from mnistforge.checks.result import CheckResult, VerifyReport
>>> r = CheckResult("duplicates.train-test", "fail", {"pairs": 1}, "1 test image in train")
>>> img = np.zeros((28, 28), np.uint8); img[10:18, 12:16] = 255
>>> r.artifacts["images"] = [(img, img, "train 3 = test 5")]
>>> out = write_report(VerifyReport("demo", [r]), tempfile.mkdtemp())
>>> sorted(p.name for p in out.iterdir())
['duplicates.train-test.png', 'index.html', 'report.json']
"""
from __future__ import annotations

import html
import logging
import re
from pathlib import Path

from ..io.atomic import atomic_file, utc_now
from ..io.types import StrPath
from ..plotting import pair_strip
from .result import VerifyReport

logger = logging.getLogger(__name__)

SCALE = 3
COLOURS = {"pass": "#1a7f37", "warn": "#9a6700", "fail": "#cf222e", "info": "#0969da"}


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "check"


def write_report(report: VerifyReport, out_dir: StrPath) -> Path:
    """Write ``index.html``, ``report.json`` and the pictures into ``out_dir``; return it."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pictures = {}
    for r in report.results:
        rows = r.artifacts.get("images")
        if not rows:
            continue
        fname = _safe(r.name) + ".png"
        img = pair_strip(rows[:8], SCALE)
        with atomic_file(out / fname) as f:
            img.save(f, format="PNG")
        pictures[r.name] = fname
    with atomic_file(out / "report.json", "w") as f:
        f.write(report.to_json() + "\n")
    c = report.counts()
    verdict = "OK" if report.ok else "FAILED"
    rows_html = [f"<tr><td style='color:{COLOURS[r.status]};font-weight:bold'>{r.status.upper()}</td>"
                 f"<td><code>{html.escape(r.name)}</code></td><td>{html.escape(r.message)}</td></tr>"
                 for r in report.results]
    pics_html = [f"<h3><code>{html.escape(name)}</code></h3>"
                 f"<p>left: first image, middle: second, right: |difference| "
                 f"(stretched)</p><img src='{html.escape(fname)}' alt='{html.escape(name)}'>"
                 for name, fname in pictures.items()]
    page = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>mnistforge verify: {html.escape(report.target)}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto}}
td{{padding:3px 8px;vertical-align:top;border-bottom:1px solid #ddd}}
img{{image-rendering:pixelated;border:1px solid #ccc}}</style></head><body>
<h1>mnistforge verify</h1>
<p>Target: <code>{html.escape(report.target)}</code> &middot; generated {utc_now()}</p>
<p><b style="color:{COLOURS['fail' if not report.ok else 'pass']}">{verdict}</b>:
{c['pass']} passed, {c['warn']} warnings, {c['fail']} failed{' (strict)' if report.strict else ''}</p>
<table><tr><th></th><th>check</th><th>result</th></tr>
{''.join(rows_html)}
</table>
<h2>Pictures</h2>
{''.join(pics_html) or '<p>No example images (no duplicates found, no reference given).</p>'}
<p>Full values: <a href="report.json">report.json</a></p>
</body></html>
"""
    with atomic_file(out / "index.html", "w") as f:
        f.write(page)
    logger.info("wrote the verification report to %s", out)
    return out
