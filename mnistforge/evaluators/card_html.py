"""Render a :class:`~.card.Card` as one self-contained HTML page and as Markdown.

Pictures are PNGs embedded as ``data:`` URIs: the error gallery, the confusion matrix and the POI matrix are drawn with
Pillow (always installed); the interval chart needs matplotlib (the ``[plot]`` extra), and without it the page says
which picture is missing and how to get it.  No JavaScript; the page works offline.
"""
from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..errors import MissingDependencyError
from ..plotting import matrix_picture, pyplot, render_grid
from .card import Card
from .significance import format_k

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["pictures", "render_html", "render_markdown", "DEFINITIONS"]

#: each section's definition, said on the page (no link: the page stands alone, offline)
DEFINITIONS = {
    "training": "test images that share an SD19 character or a writer with the training set are not "
                "new to the model: its error on them is not a test error of unseen writing.",
    "rate": "errors / test images; Wald: rate +/- z sqrt(rate (1 - rate) / n); exact "
            "(Clopper-Pearson): the beta quantiles, right even near 0 errors.",
    "difference": "on the images where two systems disagree, n12 counts those only this one "
                  "gets wrong, n21 those only the other does (Yadav & Bottou 2019).",
    "labels": "test images whose label fewer than 3 of 5 human workers chose (Northcutt et al. "
              "2021), and the images all four Keysers (2006) systems miss.",
    "pairs": "POI: the share of paired bootstrap resamples of the test set in which A makes fewer "
             "errors than B (ties half); max K: the largest number of simultaneous comparisons "
             "(Bonferroni: each at 1 - confidence / K) for which 'A worse' still holds (0: not "
             "even one; a huge K only says the difference is overwhelming).",
    "writers": "the images of one writer err together: the cluster-robust (CR1) Wald interval by "
               "writer (as statsmodels' cov_type='cluster'), design effect = its variance / the naive "
               "one; POI from resampling whole writers; strata: NIST series hsf_0 (SD-3, Census "
               "employees) and hsf_4 (SD-1, high-school students).",
    "qmnist": "QMNIST's test set is MNIST's 10,000 test images followed by 50,000 recovered "
              "ones; a model selected on the first part tends to do worse on the second. The two "
              "parts share writers: the gap's interval is clustered by writer where writers are known.",
    "runs": "a system trained with several seeds: the spread of its error over runs, a bootstrap over runs x "
            "test rows (x writers where known), the share of the variance of the difference that is between "
            "runs, and the runs per system that would make the observed difference significant.",
    "gallery": "misclassified test images; rows of the confusion matrix are the true class.",
    "classes": "errors among the test images of each class, over their number.",
    "provenance": "the test set as loaded, named by the sha256 of its arrays.",
}


def _png(img: Image.Image) -> str:
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _interval_chart(card: Card) -> Image.Image:
    """Error rates with exact intervals of every system compared (matplotlib)."""
    plt = pyplot("the interval chart of the card")
    comp = card.comparison or {"systems": [{"name": card.system, **card.rate.to_dict()}]}
    names = [s["name"] for s in comp["systems"]]
    fig, ax = plt.subplots(figsize=(6, 0.4 * len(names) + 1))
    for i, s in enumerate(comp["systems"]):
        lo, hi = s["exact"]
        ax.plot([100 * lo, 100 * hi], [i, i], color="tab:blue")
        ax.plot([100 * s["rate"]], [i], "o", color="tab:red" if s["name"] == card.system else "k")
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("error rate (%), exact interval")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, metadata={"Software": None})
    plt.close(fig)
    from PIL import Image

    buf.seek(0)
    return Image.open(buf)


def pictures(card: Card, images: npt.ArrayLike) -> tuple[dict[str, str], dict[str, str]]:
    """``({name: data URI}, {name: why missing})`` of the card's pictures."""
    out, missing = {}, {}
    if card.gallery:
        at = [g.row for g in card.gallery]
        caps = [f"{g.row}{'*' if g.label_issue else ''}: {g.label_name}>{g.predicted_name}" for g in card.gallery]
        out["gallery"] = _png(render_grid(np.asarray(images)[at], captions=caps,
                                          cols=min(10, len(at)), scale=2, invert=True))
    if card.confusion is not None:
        k = len(card.classes)
        cols = [str(i) for i in range(k)]   # columns by index, rows by index and class name
        rows = [c if str(nm) == c else f"{c} {nm}" for c, nm in zip(cols, card.classes)]
        cm = np.asarray(card.confusion)
        off = cm.copy()
        np.fill_diagonal(off, 0)
        out["confusion"] = _png(matrix_picture(off, rows, cols, lambda i, j: str(cm[i, j]), cell=40 if k <= 10 else 26))
    if card.comparison is not None:
        nm, poi = card.comparison["names"], np.asarray(card.comparison["poi"])
        # full names, once: rows "1: name", columns by number (a name cut to a cell's width
        # made two systems look the same)
        out["poi"] = _png(matrix_picture(poi, [f"{i + 1}: {x}" for i, x in enumerate(nm)],
                                          [str(i + 1) for i in range(len(nm))],
                                          lambda i, j: "-" if i == j else f"{poi[i, j]:.2f}", vmax=1.0))
    try:
        out["intervals"] = _png(_interval_chart(card))
    except MissingDependencyError:
        missing["intervals"] = ("the interval chart needs matplotlib: "
                                "pip install 'mnistforge[plot]' (every number is in the tables)")
    return out, missing


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def _iv(iv: Sequence[float]) -> str:
    return f"[{100 * iv[0]:.2f}, {100 * iv[1]:.2f}] %"


#: (key, title, paragraphs, table rows (first = header) or None, picture name or None)
Section = tuple[str, str, list[str], "list[list[str]] | None", "str | None"]


def _sections(card: Card) -> list[Section]:
    """The card's sections, in page order (HTML and Markdown render the same ones)."""
    r = card.rate
    c = f"{100 * card.confidence:g} %"
    out: list[Section] = []
    if card.training_overlap:   # before any number
        out.append(("training", "Warning: training and test sets overlap", [card.training_overlap + "."], None, None))
    out.append(("rate", "Error rate", [
        f"{r.errors} errors on {r.n} test images: {_pct(r.rate)}; Wald {c} interval "
        f"{_iv(r.wald)}, exact (Clopper-Pearson) {_iv(r.exact)}."], None, "intervals"))
    diff = (f"Against a system that disagrees with this one on {r.errors} images (as many as "
            f"its errors), a difference in errors n12 - n21 of at least "
            f"{card.significant_difference} is significant (paired test, one-sided {c}: "
            "n12 - n21 >= z sqrt(n12 + n21))." if card.significant_difference else
            f"With {r.errors} errors, no difference against a system that disagrees on as many "
            "images can be significant (paired test, one-sided {c}).".replace("{c}", c))
    out.append(("difference", "Difference needed for significance", [diff], None, None))
    if (k := card.known_labels) is None:
        out.append(("labels", "Known label errors", [f"Not counted: {card.known_labels_note}."], None, None))
    else:
        wl = k["without_label_issues"]
        out.append(("labels", "Known label errors", [
            f"{k['on_label_issues']} of the {k['errors']} errors fall on the {k['label_issues']} "
            f"known label errors (Northcutt et al. 2021: fewer than 3 of 5 workers chose the "
            f"given label); {k['rest']} are the rest. {k['on_keysers_common']} fall on the "
            f"{k['keysers_common']} images all four Keysers (2006) systems miss.",
            f"Without the label errors: {wl['errors']} / {wl['n']} = {_pct(wl['rate'])} "
            f"(exact {_iv(wl['exact'])})."], None, None))
    if card.comparison is None:
        out.append(("pairs", "Other systems", [card.comparison_note + "."], None, None))
    else:
        comp = card.comparison
        rows = [["A", "B", "errors A", "errors B", "n12", "n21", "McNemar p", "POI(A beats B)", "A worse", "max K"]]
        rows += [[p["a"], p["b"], str(p["errors_a"]), str(p["errors_b"]), str(p["n12"]), str(p["n21"]),
                  f"{p['mcnemar_p']:.3g}", f"{p['poi_a_better']:.3f}", "yes" if p["paired_worse"] else "no",
                  format_k(p["max_bonferroni_k"])] for p in comp["pairs"] if p["a"] == card.system]
        comb = card.combination or {}
        cr = comb.get("rate", {})
        paras = [f"Bootstrap B = {card.resamples} (seed {card.seed}, ties counted half). "
                 "Picture: POI(row beats column), the systems numbered as in its rows."]
        if comb:
            paras.append(f"Combination 'vote': majority vote of "
                         f"{', '.join(comb.get('members', []))} ({comb.get('tie_breaker')} breaks "
                         f"ties): {cr.get('errors')} errors = {_pct(cr.get('rate', 0.0))}.")
        if card.training:
            paras.append("Training-set sizes: " + "; ".join(
                f"{nm}: {'not given' if x is None else f'{x:,}'}" for nm, x in card.training.items()) + ".")
        paras += [f"{nm}: {d}" for nm, d in comp.get("descriptions", {}).items() if d]
        out.append(("pairs", "Paired comparisons", paras, rows, "poi"))
    if (w := card.clustered) is None:
        out.append(("writers", "Writers", [f"Not shown: {card.clustered_note}."], None, None))
    else:
        rows = [["rows", "mean", f"naive {c}", f"writer-clustered {c}", "design effect", "writers",
                 "POI(A beats B)"]] + [
            [label, _pct(x["mean"]), _iv(x["naive_interval"]), _iv(x["interval"]), "-" if x["design_effect"] is None
             else f"{x['design_effect']:.2f}", str(x["clusters"]),
             f"{x['poi_a_better']:.3f}" if "poi_a_better" in x else "-"]
            for label, x in [(card.system, w["system"]), *((f"{card.system} in {k}", v) for k, v in w["system"].get(
                "strata", {}).items()), *((f"{p['a']} - {p['b']}", p) for p in w["pairs"])]]
        out.append(("writers", "Writers: naive and clustered intervals", [
            "Naive intervals treat the test images as independent; the clustered ones do not."], rows, None))
    if (rt := card.runs) is not None:
        rows = [["A", "B", "runs", "mean rates", "between-run SD", "POI(A beats B)", "variance between runs",
                 "runs needed"]] + [[p["a"], p["b"], f"{p['runs'][0]}, {p['runs'][1]}", f"{_pct(p['rates'][0])}, "
                                     f"{_pct(p['rates'][1])}", f"{_pct(p['spread'][0])}, {_pct(p['spread'][1])}",
                                     f"{p['bootstrap']['poi']:.3f}", f"{p['between_share']:.0%}",
                                     str(p["runs_needed"] or "never")] for p in rt["pairs"]]
        out.append(("runs", "Several runs per system", [
            "The sections above show each system's first run; " + "; ".join(
                f"{x['name']}: {len(x['runs'])} runs ({', '.join(x['runs'])})" for x in rt["systems"]) + "."],
            rows, None))
    if (q := card.qmnist) is None:
        out.append(("qmnist", "QMNIST test10k vs test50k", [f"Skipped: {card.qmnist_note}."], None, None))
    else:
        a, b = (q[nm] for nm in q["names"])
        out.append(("qmnist", "QMNIST test10k vs test50k", [
            f"{q['names'][0]} (rows before {q['boundary']}) {_pct(a['rate'])} ({a['errors']} "
            f"errors), {q['names'][1]} {_pct(b['rate'])} ({b['errors']}): gap {100 * q['gap']:+.2f} "
            f"points, Wald {c} interval {_iv(q['interval'])} (the parts as independent)"
            + ("" if (qc := q.get("clustered")) is None else
               f"; clustered by writer {_iv(qc['interval'])} ({qc['clusters']} writers, design effect "
               f"{'-' if qc['design_effect'] is None else format(qc['design_effect'], '.2f')})")
            + (": significant." if q["significant"] else ": not significant.")], None, None))
    rows = [["row", "label", "predicted", "human doubt"]] + [
        [str(g.row), g.label_name, g.predicted_name, "yes" if g.label_issue else ""] for g in card.gallery]
    out.append(("gallery", "Error gallery", [
        f"Order: {card.gallery_rule}. Caption: row: true>predicted; * marks a known label "
        "error (humans disagreed with the label)."], rows, "gallery"))
    if card.confusion is not None:
        out.append(("gallery", "Confusion matrix", [
            "Rows: true class, columns: predicted class (" + ", ".join(
                f"{i}={nm}" for i, nm in enumerate(card.classes)) + "); colour: off-diagonal counts."],
            [["true \\ predicted"] + [str(i) for i in range(len(card.classes))]]
            + [[str(i)] + [str(x) for x in row] for i, row in enumerate(card.confusion)], "confusion"))
    if card.per_class:
        out.append(("classes", "Errors per class", [], [["class", "name", "test images", "errors", "error rate"]] + [
            [str(c["class"]), str(c["name"]), str(c["n"]), str(c["errors"]),
             "-" if c["rate"] is None else _pct(c["rate"])] for c in card.per_class], None))
    out.append(("provenance", "Provenance", [
        f"Test set {card.test}, identified by content; predictions from {card.source}."]
        + card.notes, _provenance_rows(card.provenance), None))
    return out


def _provenance_rows(pv: dict[str, object]) -> list[list[str]]:
    """The provenance as a table a person reads: one row per field, a file's status per row."""
    said = {"name": "dataset", "split": "split", "rows": "rows", "source": "read from",
            "synthetic": "synthetic", "images_sha256": "sha256 of the images (as loaded)",
            "labels_sha256": "sha256 of the labels (int64)", "registry_order_free_sha256": "registry's order-free hash"}
    rows = [["field", "value"]]
    for key, value in pv.items():
        if key == "status" and isinstance(value, dict):
            rows += [[f"file {f}", str(v)] for f, v in value.items()] or [["files", "-"]]
        elif key == "changes" and isinstance(value, list):
            rows.append(["changes undone", "; ".join(map(str, value)) or "none"])
        elif isinstance(value, bool):
            rows.append([said.get(key, key), "yes" if value else "no"])
        else:
            rows.append([said.get(key, key), "-" if value is None else str(value)])
    return rows


def _title(card: Card) -> str:
    """``SYSTEM (FILE) on DATASET:SPLIT``: never a local folder."""
    pv = card.provenance
    return (f"{card.system} ({Path(card.source).name}) on "
            f"{pv.get('name', '?')}:{pv.get('split', '?')}")


CSS = ("body{font-family:sans-serif;max-width:1100px;margin:1em auto;color:#222}"
       "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;"
       "font-size:13px}th{background:#eee}.missing{color:#a00}img{max-width:100%}"
       "details{margin:.5em 0}.def{color:#555;font-size:13px}")


def _table_html(rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(x)}</th>" for x in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in r) + "</tr>" for r in rows[1:])
    return f"<table><tr>{head}</tr>{body}</table>"


def render_html(card: Card, pics: dict[str, str], missing: dict[str, str]) -> str:
    """The card as one HTML page (pictures as data URIs)."""
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>card: {e(_title(card))}</title>", f"<style>{CSS}</style></head><body>",
             f"<h1>Results card: {e(_title(card))}</h1>"]
    for key, title, paras, rows, pic in _sections(card):
        parts += [f'<h2 id="{key}">{e(title)}</h2>', f'<p class="def">Definition: {e(DEFINITIONS[key])}</p>',
                  *(f"<p>{e(p)}</p>" for p in paras)]
        if pic in pics:
            parts.append(f'<img alt="{e(title)}" src="{pics[pic]}">')
        elif pic in missing:
            parts.append(f'<p class="missing">Picture missing: {e(missing[pic])}</p>')
        if rows is not None:
            table = _table_html(rows)
            parts.append(f"<details><summary>table ({len(rows) - 1} rows)</summary>{table}</details>"
                         if len(rows) > 25 else table)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _md_escape(text: str) -> str:
    # Markdown passes raw HTML through: a file named "<script>..." must stay text
    return html.escape(str(text), quote=False)


def render_markdown(card: Card, pics: dict[str, str], missing: dict[str, str]) -> str:
    """The same content as Markdown (pictures as data URIs)."""
    e = _md_escape
    lines = [f"# Results card: {e(_title(card))}", ""]
    for key, title, paras, rows, pic in _sections(card):
        paras = [e(p) for p in paras]
        rows = None if rows is None else [[e(x) for x in r] for r in rows]
        lines += [f"## {title}", "", f"*Definition:* {e(DEFINITIONS[key])}", ""]
        lines += [x for p in paras for x in (p, "")]
        if pic in pics:
            lines += [f"![{title}]({pics[pic]})", ""]
        elif pic in missing:
            lines += [f"Picture missing: {missing[pic]}", ""]
        if rows is not None:
            cell = [[x.replace("|", "\\|") for x in r] for r in rows]
            lines += ["| " + " | ".join(cell[0]) + " |", "|" + "---|" * len(cell[0]),
                      *("| " + " | ".join(r) + " |" for r in cell[1:]), ""]
    return "\n".join(lines)
