"""Files that carry a system's outputs on a test set: prediction files and error lists.

Two plain-text formats, both read by ``mnistforge significance``:

**Prediction files** (written by ``mnistforge evaluate --predictions``; ``.gz`` compresses)::

    # mnistforge predictions
    # name: knn:k=3
    # train: mnist:train
    # test: mnist:test
    # n: 10000
    index<TAB>label<TAB>prediction
    0<TAB>7<TAB>7
    ...

``index`` is the 0-based position in the test split.

**Error lists** (the format of the appendix of Keysers 2006): one line per system,
``name<TAB>description<TAB>comma-separated 1-based indices of the wrongly classified
samples``; ``#`` starts a comment; an optional ``# n: 10000`` line gives the test-set
size (otherwise it must be passed as ``n``).  Only right/wrong is known.
"""
from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from ..classifiers.base import short_name
from ..errors import ConfigError, FormatError, TargetNotFoundError
from ..io.atomic import atomic_file
from ..io.compression import open_gzip_writer, open_text

logger = logging.getLogger(__name__)

PREDICTIONS_MAGIC = "# mnistforge predictions"
PREDICTIONS_HEADER = "index\tlabel\tprediction"
EXAMPLES = {"keysers2006": "keysers2006.tsv"}
_DIRECTIVE = re.compile(r"^#\s*([A-Za-z_][\w-]*)\s*[:=]\s*(.*?)\s*$")

__all__ = ["SystemOutput", "write_predictions", "read_predictions", "read_error_lists",
           "write_error_lists", "read_systems", "load_example", "EXAMPLES"]


@dataclass
class SystemOutput:
    """What is known of one system on one test set.

    ``wrong`` (bool, one per sample) is always set; ``predictions`` and ``labels`` only
    when the source had them (prediction files), which allows a plurality vote.
    """

    name: str
    wrong: np.ndarray
    description: str = ""
    predictions: np.ndarray | None = None
    labels: np.ndarray | None = None
    source: str | None = None
    metadata: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.wrong.size)

    @property
    def errors(self) -> int:
        return int(np.count_nonzero(self.wrong))

    def indices(self, one_based: bool = True) -> np.ndarray:
        """Indices of the wrongly classified samples."""
        return np.flatnonzero(self.wrong) + (1 if one_based else 0)


def _read_lines(path) -> list[str]:
    path = Path(path)
    if not path.is_file():
        raise TargetNotFoundError("system output file not found", path=path,
                                  expected="a prediction file or an error-list file",
                                  found="nothing", hint="check the path")
    try:
        with open_text(path) as f:
            return f.read().splitlines()
    except (UnicodeDecodeError, OSError, EOFError) as e:
        raise FormatError("cannot read as text", path=path, expected="a UTF-8 text file "
                          "(optionally .gz)", found=str(e)) from e


def write_predictions(path, predictions, labels, *, name: str, metadata: dict | None = None):
    """Write a prediction file atomically (gzip when ``path`` ends in ``.gz``).

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "pred.tsv")
    >>> write_predictions(p, [1, 2, 3], [1, 0, 3], name="demo")
    >>> read_predictions(p).errors
    1
    """
    p, y = np.asarray(predictions).ravel(), np.asarray(labels).ravel()
    if p.shape != y.shape:
        raise ConfigError("predictions and labels differ in length", expected="equal lengths",
                          found=f"{p.size} predictions, {y.size} labels")
    meta = {"name": name, **(metadata or {}), "n": p.size}
    lines = [PREDICTIONS_MAGIC]
    for k, v in meta.items():
        v = str(v).replace("\n", " ")
        lines.append(f"# {k}: {v}")
    lines.append(PREDICTIONS_HEADER)
    body = io.StringIO()
    body.write("\n".join(lines) + "\n")
    np.savetxt(body, np.column_stack([np.arange(p.size), y, p]), fmt="%d", delimiter="\t")
    data = body.getvalue().encode("utf-8")
    path = Path(path)
    with atomic_file(path, "wb") as f:
        if path.suffix == ".gz":
            with open_gzip_writer(f) as g:
                g.write(data)
        else:
            f.write(data)


def _directives(lines) -> dict:
    out = {}
    for line in lines:
        m = _DIRECTIVE.match(line)
        if m:
            out.setdefault(m.group(1).lower(), m.group(2))
    return out


def read_predictions(path) -> SystemOutput:
    """Read a prediction file written by :func:`write_predictions`."""
    lines = _read_lines(path)
    meta = _directives(ln for ln in lines if ln.startswith("#"))
    body = [ln for ln in lines if ln.strip() and not ln.startswith("#")]
    if not body or body[0].strip().split("\t") != PREDICTIONS_HEADER.split("\t"):
        raise FormatError("not a prediction file", path=path,
                          expected=f"a header line {PREDICTIONS_HEADER!r}",
                          found=repr(body[0][:60]) if body else "no data lines")
    try:
        table = np.array([ln.split("\t") for ln in body[1:]], dtype=np.int64).reshape(-1, 3)
    except ValueError as e:
        raise FormatError("malformed prediction rows", path=path,
                          expected="three tab-separated integers per row", found=str(e)) from e
    idx, y, p = table.T
    n = idx.size
    if not np.array_equal(np.sort(idx), np.arange(n)):
        raise FormatError("prediction indices are not a permutation of 0..n-1", path=path,
                          expected=f"each index 0..{n - 1} once", found="gaps or repeats")
    order = np.argsort(idx, kind="stable")
    y, p = y[order], p[order]
    if "n" in meta and meta["n"].isdigit() and int(meta["n"]) != n:
        raise FormatError("prediction file is truncated", path=path,
                          expected=f"{meta['n']} rows (from its header)", found=f"{n} rows")
    # lenet/cnn files carry their whole spec as the name: the table shows the short one
    name = short_name(meta.pop("name", None) or Path(path).name.split(".")[0])
    return SystemOutput(name, p != y, meta.get("classifier", ""), p, y, str(path), meta)


def _parse_indices(text, n, path, name) -> np.ndarray:
    text = text.strip()
    if not text:
        return np.zeros(0, np.int64)
    try:
        idx = np.array([int(t) for t in text.replace(" ", "").split(",") if t], np.int64)
    except ValueError as e:
        raise FormatError(f"bad index list for system {name!r}", path=path,
                          expected="comma-separated 1-based integers", found=str(e)) from e
    if idx.size and (idx.min() < 1 or idx.max() > n):
        raise FormatError(f"index out of range for system {name!r}", path=path,
                          expected=f"1-based indices in 1..{n}",
                          found=f"range {idx.min()}..{idx.max()}",
                          hint="pass the test-set size with --n (indices are 1-based)")
    if np.unique(idx).size != idx.size:
        raise FormatError(f"repeated index for system {name!r}", path=path,
                          expected="each wrong sample once", found="duplicates")
    return idx


def read_error_lists(path, n: int | None = None, *, text: str | None = None) -> list[SystemOutput]:
    """Read an error-list file (Keysers format); ``n`` overrides a ``# n:`` line.

    Examples
    --------
    >>> s = read_error_lists(None, n=5, text="A\\tfirst\\t1,3\\nB\\tsecond\\t\\n")
    >>> [x.wrong.tolist() for x in s]
    [[True, False, True, False, False], [False, False, False, False, False]]
    """
    lines = text.splitlines() if text is not None else _read_lines(path)
    where = path if path is not None else "<text>"
    meta = _directives(ln for ln in lines if ln.startswith("#"))
    if n is None:
        if "n" not in meta or not meta["n"].isdigit():
            raise ConfigError("test-set size unknown for an error-list file", path=where,
                              expected="a '# n: N' line in the file or --n N",
                              found="neither", hint="e.g. --n 10000 for the MNIST test set")
        n = int(meta["n"])
    n = int(n)
    if not 1 <= n <= MAX_TEST_SIZE:   # "# n: 1e11" would allocate 100 GB of flags
        raise ConfigError("test-set size out of range", path=where,
                          expected=f"1..{MAX_TEST_SIZE:,} samples", found=f"{n:,}")
    out = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) not in (2, 3):
            raise FormatError(f"line {lineno} is not an error list", path=where,
                              expected="name<TAB>description<TAB>comma-separated indices",
                              found=f"{len(parts)} tab-separated fields")
        name, desc = parts[0].strip(), parts[1].strip()
        idx = _parse_indices(parts[2] if len(parts) == 3 else "", n, where, name)
        wrong = np.zeros(n, bool)
        wrong[idx - 1] = True
        out.append(SystemOutput(name, wrong, desc, source=str(where), metadata=dict(meta)))
    if not out:
        raise FormatError("no systems found", path=where, expected="at least one line "
                          "name<TAB>description<TAB>indices", found="only comments/blank lines")
    return out


def write_error_lists(path, systems, *, header: str = "", n: int | None = None):
    """Write systems as an error-list file (1-based indices) atomically.

    ``systems`` are :class:`SystemOutput` objects; ``n`` defaults to their size.
    """
    systems = list(systems)
    n = int(n if n is not None else systems[0].n)
    lines = [f"# {h}" if h else "#" for h in header.splitlines()] if header else []
    lines.append(f"# n: {n}")
    for s in systems:
        if s.n != n:
            raise ConfigError(f"system {s.name!r} has another test-set size",
                              expected=f"{n} samples", found=f"{s.n}")
        idx = ",".join(str(i) for i in s.indices(one_based=True))
        lines.append(f"{s.name}\t{s.description}\t{idx}")
    with atomic_file(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _is_prediction_file(path) -> bool:
    for line in _read_lines(path)[:200]:
        if line.strip() == PREDICTIONS_MAGIC or line.strip() == PREDICTIONS_HEADER:
            return True
        if line.strip() and not line.startswith("#"):
            return False
    return False


#: Largest test set an error-list file may describe (MNIST's has 10,000; QMNIST's 60,000).
MAX_TEST_SIZE = 10**8


def read_systems(paths, n: int | None = None, names=None) -> list[SystemOutput]:
    """Read prediction files and/or error-list files into systems on one test set.

    ``names`` (optional) renames the systems in order; an error-list file may hold
    several systems.
    """
    systems: list[SystemOutput] = []
    for p in paths:
        if _is_prediction_file(p):
            systems.append(read_predictions(p))
        else:
            systems.extend(read_error_lists(p, n))
    if names:
        names = list(names)
        if len(names) != len(systems):
            raise ConfigError("--names does not match the systems read",
                              expected=f"{len(systems)} names "
                              f"({', '.join(s.name for s in systems)})",
                              found=f"{len(names)} names")
        for s, nm in zip(systems, names):
            s.name = nm
    sizes = {s.n for s in systems}
    if len(sizes) > 1:
        raise ConfigError("systems were not evaluated on the same test set",
                          expected="equal test-set sizes",
                          found=", ".join(f"{s.name}: {s.n}" for s in systems))
    seen = set()
    for s in systems:
        if s.name in seen:
            raise ConfigError("two systems share a name", expected="distinct names",
                              found=s.name, hint="rename them with --names")
        seen.add(s.name)
    if n is not None and systems and systems[0].n != int(n):
        raise ConfigError("test-set size differs from --n", expected=f"{n} samples",
                          found=f"{systems[0].n}")
    check_same_truth(systems)
    return systems


def check_same_truth(systems) -> None:
    """Refuse prediction files whose ground-truth labels differ: not the same test set (or not
    in the same order), so comparing their errors would be meaningless."""
    with_labels = [s for s in systems if s.labels is not None]
    for s in with_labels[1:]:
        ref = with_labels[0]
        if not np.array_equal(s.labels, ref.labels):
            k = int(np.flatnonzero(s.labels != ref.labels)[0])
            raise ConfigError(
                "the systems were scored against different ground truths",
                expected=f"the same labels in {ref.name} and {s.name}",
                found=f"{int((s.labels != ref.labels).sum())} differ (first at index {k}: "
                      f"{int(ref.labels[k])} vs {int(s.labels[k])})",
                hint="compare predictions on the same test set, in the same order")


def load_example(name: str = "keysers2006") -> list[SystemOutput]:
    """Load a bundled example: ``keysers2006`` = four MNIST systems and their combination.

    Examples
    --------
    >>> [(s.name, s.errors) for s in load_example("keysers2006")]
    [('SC', 63), ('SVM', 56), ('IDM', 54), ('CNN', 42), ('CC', 35)]
    """
    if name not in EXAMPLES:
        raise ConfigError("unknown example", expected="one of " + ", ".join(EXAMPLES),
                          found=name)
    text = resources.files("mnistforge").joinpath("data", EXAMPLES[name]).read_text("utf-8")
    systems = read_error_lists(None, text=text)
    for s in systems:
        s.source = f"mnistforge/data/{EXAMPLES[name]}"
    return systems
