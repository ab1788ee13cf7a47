"""Files that carry a system's outputs on a test set: prediction files and error lists.  The one reader of every input
``card`` and ``significance`` take (also tables and arrays of labels or scores), with their checks.  Both formats are
described in ``docs/significance.md``: prediction files (``# mnistforge predictions`` header,
``index<TAB>label<TAB>prediction`` with 0-based indices, written by ``evaluate --predictions``) and Keysers 2006 error
lists (1-based indices; only right/wrong is known).
"""
from __future__ import annotations

import codecs
import errno
import io
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from ..classifiers.base import short_name
from ..errors import ConfigError, FormatError, TargetNotFoundError, TestSetMismatchError
from ..io.atomic import atomic_file
from ..io.compression import open_gzip_writer, open_reader
from ..io.foreign.csvfile import is_number
from ..io.outputs import _kind

PREDICTIONS_MAGIC = "# mnistforge predictions"
PREDICTIONS_HEADER = "index\tlabel\tprediction"
EXAMPLES = {"keysers2006": "keysers2006.tsv"}
_DIRECTIVE = re.compile(r"^#\s*([A-Za-z_][\w-]*)\s*[:=]\s*(.*?)\s*$")

__all__ = ["SystemOutput", "write_predictions", "read_predictions", "read_error_lists",
           "write_error_lists", "read_systems", "load_example", "EXAMPLES", "read_inputs",
           "read_labels", "check_labels", "input_kind", "read_text", "regular_input"]


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
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.wrong.size)

    @property
    def errors(self) -> int:
        return int(np.count_nonzero(self.wrong))

    def indices(self, one_based: bool = True) -> np.ndarray:
        """Indices of the wrongly classified samples."""
        return np.flatnonzero(self.wrong) + (1 if one_based else 0)


def _read_lines(path: str | os.PathLike[str]) -> list[str]:
    return read_text(path, "a prediction file or an error-list file").splitlines()


def write_predictions(path: str | os.PathLike[str], predictions: np.typing.ArrayLike, labels: np.typing.ArrayLike, *,
                      name: str, metadata: dict[str, object] | None = None) -> None:
    """Write a prediction file atomically (gzip when ``path`` ends in ``.gz``).

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
    lines = [PREDICTIONS_MAGIC, *(f"# {k}: " + str(v).replace("\n", " ") for k, v in meta.items()), PREDICTIONS_HEADER]
    body = io.StringIO()
    body.write("\n".join(lines) + "\n")
    np.savetxt(body, np.column_stack([np.arange(p.size), y, p]), fmt="%d", delimiter="\t")
    data = body.getvalue().encode("utf-8")
    with atomic_file(path, "wb") as f:
        if Path(path).suffix == ".gz":
            with open_gzip_writer(f) as g:
                g.write(data)
        else:
            f.write(data)


def _directives(lines: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        if m := _DIRECTIVE.match(line):
            out.setdefault(m.group(1).lower(), m.group(2))
    return out


def read_predictions(path: str | os.PathLike[str]) -> SystemOutput:
    """Read a prediction file written by :func:`write_predictions`."""
    lines = _read_lines(path)
    meta = _directives(ln for ln in lines if ln.startswith("#"))
    body = [ln for ln in lines if ln.strip() and not ln.startswith("#")]
    if not body or body[0].strip().split("\t") != PREDICTIONS_HEADER.split("\t"):
        raise FormatError("not a prediction file", path=path, expected=f"a header line {PREDICTIONS_HEADER!r}",
                          found=repr(body[0][:60]) if body else "no data lines")
    try:
        table = np.array([ln.split("\t") for ln in body[1:]], dtype=np.int64).reshape(-1, 3)
    except (ValueError, OverflowError) as e:   # (a 23-digit number overflows int64)
        raise FormatError("malformed prediction rows", path=path,
                          expected="three tab-separated integers per row", found=str(e)) from e
    idx, y, p = table.T
    n = idx.size
    if n and table.min() < 0:
        row = int(np.flatnonzero((table < 0).any(axis=1))[0])
        raise FormatError("a negative number in a prediction file", path=path,
                          expected="0-based indices and class labels (>= 0)",
                          found=f"{table[row].tolist()} in data row {row}")
    if not np.array_equal(np.sort(idx), np.arange(n)):
        raise FormatError("prediction indices are not a permutation of 0..n-1", path=path,
                          expected=f"each index 0..{n - 1} once", found="gaps or repeats")
    order = np.argsort(idx, kind="stable")
    y, p = y[order], p[order]
    if "n" in meta and meta["n"].isdigit() and int(meta["n"]) != n:
        raise FormatError("prediction file is truncated", path=path,
                          expected=f"{meta['n']} rows (from its header)", found=f"{n} rows")
    # lenet/cnn files carry their whole spec as the name: the table shows the short one
    name = short_name(meta.pop("name", "") or Path(path).name.split(".")[0])
    return SystemOutput(name, p != y, meta.get("classifier", ""), p, y, str(path), meta)


def _parse_indices(text: str, n: int, path: str | os.PathLike[str], name: str) -> np.ndarray:
    if not (text := text.strip()):
        return np.zeros(0, np.int64)
    try:
        idx = np.array([int(t) for t in text.replace(" ", "").split(",") if t], np.int64)
    except (ValueError, OverflowError) as e:   # (a 23-digit index overflows int64)
        raise FormatError(f"bad index list for system {name!r}", path=path,
                          expected="comma-separated 1-based integers", found=str(e)) from e
    if idx.size and (idx.min() < 1 or idx.max() > n):
        raise FormatError(f"index out of range for system {name!r}", path=path, expected=f"1-based indices in 1..{n}",
                          found=f"range {idx.min()}..{idx.max()}",
                          hint="pass the test-set size with --n (indices are 1-based)")
    if np.unique(idx).size != idx.size:
        raise FormatError(f"repeated index for system {name!r}", path=path,
                          expected="each wrong sample once", found="duplicates")
    return idx


def read_error_lists(path: str | os.PathLike[str] | None, n: int | None = None, *, text: str | None = None,
                     default_n: int | None = None) -> list[SystemOutput]:
    """Read an error-list file (Keysers format); ``n`` overrides a ``# n:`` line, ``default_n``
    stands in for a missing one.

    >>> s = read_error_lists(None, n=5, text="A\\tfirst\\t1,3\\nB\\tsecond\\t\\n")
    >>> [x.wrong.tolist() for x in s]
    [[True, False, True, False, False], [False, False, False, False, False]]
    """
    if text is not None:
        lines = text.splitlines()
    else:
        assert path is not None, "an error list is read from a path or a text"
        lines = _read_lines(path)
    where = path if path is not None else "<text>"
    meta = _directives(ln for ln in lines if ln.startswith("#"))
    if n is None and "n" not in meta and default_n is not None:
        n = default_n
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


def write_error_lists(path: str | os.PathLike[str], systems: Iterable[SystemOutput], *, header: str = "",
                      n: int | None = None) -> None:
    """Write systems as an error-list file (1-based indices) atomically.

    ``systems`` are :class:`SystemOutput` objects; ``n`` defaults to their size.
    """
    systems = list(systems)
    n = int(n if n is not None else systems[0].n)
    lines = [f"# {h}" if h else "#" for h in header.splitlines()] if header else []
    lines.append(f"# n: {n}")
    for s in systems:
        if s.n != n:
            raise ConfigError(f"system {s.name!r} has another test-set size", expected=f"{n} samples", found=f"{s.n}")
        idx = ",".join(str(i) for i in s.indices(one_based=True))
        lines.append(f"{s.name}\t{s.description}\t{idx}")
    with atomic_file(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _is_prediction_file(path: str | os.PathLike[str]) -> bool:
    for line in _read_lines(path)[:200]:
        if line.strip() == PREDICTIONS_MAGIC or line.strip() == PREDICTIONS_HEADER:
            return True
        if line.strip() and not line.startswith("#"):
            return False
    return False


#: Largest test set an error-list file may describe (MNIST's has 10,000; QMNIST's 60,000).
MAX_TEST_SIZE = 10**8


def read_systems(paths: Iterable[str | os.PathLike[str]], n: int | None = None,
                 names: Iterable[str] | None = None) -> list[SystemOutput]:
    """Read prediction files and/or error-list files into systems on one test set.

    ``names`` (optional) renames the systems in order; an error-list file may hold several systems.
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
            raise ConfigError("--names does not match the systems read", expected=f"{len(systems)} names "
                              f"({', '.join(s.name for s in systems)})", found=f"{len(names)} names")
        for s, nm in zip(systems, names):
            s.name = nm
    sizes = {s.n for s in systems}
    if len(sizes) > 1:
        raise ConfigError("systems were not evaluated on the same test set", expected="equal test-set sizes",
                          found=", ".join(f"{s.name}: {s.n}" for s in systems))
    seen = set()
    for s in systems:
        if s.name in seen:
            raise ConfigError("two systems share a name", expected="distinct names",
                              found=s.name, hint="rename them with --names")
        seen.add(s.name)
    if n is not None and systems and systems[0].n != int(n):
        raise ConfigError("test-set size differs from --n", expected=f"{n} samples", found=f"{systems[0].n}")
    check_same_truth(systems)
    return systems


def check_same_truth(systems: Iterable[SystemOutput]) -> None:
    """Refuse prediction files whose ground-truth labels differ: not the same test set (or not
    in the same order), so comparing their errors would be meaningless."""
    with_labels = [s for s in systems if s.labels is not None]
    for s in with_labels[1:]:
        ref = with_labels[0]
        assert s.labels is not None and ref.labels is not None  # with_labels
        if not np.array_equal(s.labels, ref.labels):
            k = int(np.flatnonzero(s.labels != ref.labels)[0])
            raise ConfigError(
                "the systems were scored against different ground truths",
                expected=f"the same labels in {ref.name} and {s.name}",
                found=f"{int((s.labels != ref.labels).sum())} differ (first at index {k}: "
                      f"{int(ref.labels[k])} vs {int(s.labels[k])})",
                hint="compare predictions on the same test set, in the same order")


#: header names of the column holding the predicted label, and of a row-index column
PREDICTION_COLUMNS = ("prediction", "predictions", "predicted", "pred", "y_pred", "yhat")
ROW_COLUMNS = ("index", "row", "id", "idx", "imageid", "image_id")


def regular_input(path: str | os.PathLike[str], expected: str) -> Path:
    """``path`` if it is a regular file (or a link to one), found so before anything opens it:
    a FIFO would block the read for ever, a device read for ever, a link loop fail deep inside.

    >>> regular_input("/dev/null", "a predictions file")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    mnistforge.errors.FormatError: /dev/null: not a file that can be read: ... a character device...
    """
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise TargetNotFoundError("file not found", path=p, expected=expected,
                                  found="nothing there", hint="check the path") from None
    except OSError as e:
        why = "a symbolic link loop" if e.errno == errno.ELOOP else os.strerror(e.errno or 0)
        raise FormatError("cannot open the file", path=p, expected=f"{expected} (a regular file)",
                          found=why, hint="point at the file itself") from None
    if not stat.S_ISREG(st.st_mode):
        raise FormatError("not a file that can be read", path=p,
                          expected=f"{expected} (a regular file)", found=_kind(st),
                          hint="point at the file itself (a pipe or device is never read)")
    return p


def read_text(path: str | os.PathLike[str], expected: str = "a text file") -> str:
    """A regular file's text (``.gz`` decompressed): UTF-8, with or without a byte-order mark;
    UTF-16/32 and 8-bit encodings (Latin-1, Windows-1252) refused by name."""
    p = regular_input(path, expected)
    try:
        with open_reader(p) as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise FormatError("cannot read the file", path=p, expected=expected, found=str(e)) from e
    for bom, name in ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
                      (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16")):
        if data.startswith(bom):
            raise FormatError(f"the file is {name} text", path=p, expected=f"{expected} in UTF-8",
                              found=f"a {name} byte-order mark", hint=f"save it as UTF-8 (iconv -f {name} -t UTF-8)")
    data = data.removeprefix(codecs.BOM_UTF8)
    if b"\x00" in data[:4096]:
        raise FormatError("the file is not text", path=p, expected=f"{expected} in UTF-8",
                          found="NUL bytes (UTF-16 or UTF-32 without a byte-order mark, or binary)",
                          hint="save it as UTF-8")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError("the file is not UTF-8", path=p, expected=f"{expected} in UTF-8",
                          found=f"byte 0x{data[e.start]:02x} at offset {e.start} (Latin-1, "
                                "Windows-1252 or another 8-bit encoding?)",
                          hint="save it as UTF-8 (iconv -f LATIN1 -t UTF-8)") from None


def _table(text: str, path: Path) -> tuple[list[str] | None, list[list[str]]]:
    """A text table's header (lower-cased; None when the first line is numbers) and rows."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    sep = "\t" if lines and "\t" in lines[0] else "," if lines and "," in lines[0] else None
    rows = [[c.strip() for c in ln.split(sep)] for ln in lines]
    header = None
    if rows and not all(is_number(c) for c in rows[0]):
        header, rows = [c.lower() for c in rows[0]], rows[1:]
    width = len(header) if header is not None else len(rows[0]) if rows else 1
    for i, r in enumerate(rows):
        if len(r) != width:
            raise FormatError(f"data row {i} has {len(r)} columns", path=path,
                              expected=f"{width} columns in every row", found=f"{len(r)}: {r[:4]}")
    return header, rows


def _numbers(cells: list[str], path: Path, what: str) -> np.ndarray:
    try:
        return np.array(cells, dtype=np.float64)
    except ValueError:
        i = next(i for i, c in enumerate(cells) if not is_number(c))
        raise FormatError(f"malformed {what}", path=path, expected=f"a number in every {what} cell",
                          found=f"{cells[i][:40]!r} in data row {i}") from None


def _text_values(path: Path, k: int) -> np.ndarray:
    """Labels (1-D) or scores (2-D) from a ``.csv``/``.tsv``/``.txt`` table."""
    header, rows = _table(read_text(path, "predicted labels or scores"), path)
    cols = list(zip(*rows)) if rows else [()]
    if len(cols) == 1:
        return _numbers(list(cols[0]), path, "label")
    if not (pred := [i for i, h in enumerate(header or ()) if h in PREDICTION_COLUMNS]):
        if len(cols) == k:   # one score per class
            return _numbers([c for r in rows for c in r], path, "score").reshape(len(rows), k)
        raise FormatError(f"{len(cols)} columns: which one is the prediction?", path=path,
                          expected=f"one column of labels, {k} columns of scores (one per class) "
                                   "or a header naming the predicted column ("
                                   + ", ".join(PREDICTION_COLUMNS[:3]) + ")",
                          found="header " + ",".join(header) if header else "no header line",
                          hint="add a header line such as 'index,prediction'")
    values = _numbers(list(cols[pred[0]]), path, "label")
    if index := [i for i, h in enumerate(header or ()) if h in ROW_COLUMNS]:
        rows_at = _numbers(list(cols[index[0]]), path, "row index")
        m = values.size
        for base in (0, 1):
            if np.array_equal(np.sort(rows_at), np.arange(base, m + base)):
                order = np.empty(m, np.int64)
                order[(rows_at - base).astype(np.int64)] = np.arange(m)
                return values[order]
        raise FormatError("the row index is not a permutation", path=path,
                          expected=f"each row 0..{m - 1} (or 1..{m}) once in column "
                                   f"{header[index[0]]!r}",  # type: ignore[index]
                          found="gaps, repeats or other numbers")
    return values


def check_labels(values: np.ndarray, classes: int, where: object, what: str = "prediction") -> np.ndarray:
    """``values`` as int64 labels in ``0..classes-1``: a 2-D array of scores (one column per
    class) becomes its row-wise argmax; a NaN or infinite score or label, a fraction, a label
    outside the classes is refused naming its row (0-based).

    >>> check_labels(np.array([[0.1, 0.9], [0.8, 0.2]]), 2, "s.npy").tolist()
    [1, 0]
    >>> check_labels(np.array([1, 99]), 10, "p.csv")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    mnistforge.errors.FormatError: p.csv: a prediction outside the classes: ... 99 at row 1 (0-based...
    """
    a = np.asarray(values)
    path = where if isinstance(where, (str, os.PathLike)) else str(where)
    if a.dtype.kind not in "iuf" or a.ndim > 2 or a.ndim == 0:
        raise FormatError("not labels or scores", path=path,
                          expected="a 1-D array of integer labels or a 2-D array of scores",
                          found=f"dtype {a.dtype}, shape {a.shape}")
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.ndim == 2:
        if a.shape[1] != classes:
            raise FormatError("a score matrix needs one column per class", path=path,
                              expected=f"{classes} columns (the test set's classes)", found=f"{a.shape[1]} columns",
                              hint="give the scores of every class, or the predicted labels")
        bad: np.ndarray | list[int] = np.flatnonzero(~np.isfinite(a).all(axis=1)) if a.dtype.kind == "f" else []
        if len(bad):
            raise FormatError("a score row holds NaN or infinity", path=path, expected="finite scores in every row",
                              found=f"row {int(bad[0])} (0-based; {len(bad)} rows in all)",
                              hint="a model that gave no score has no prediction: fix those rows")
        best: np.ndarray = a.argmax(axis=1).astype(np.int64)
        return best
    if a.dtype.kind == "f":
        for test, words in ((~np.isfinite(a), "NaN or infinity"), (a != np.round(a), "a fraction")):
            bad = np.flatnonzero(test)
            if bad.size:
                raise FormatError(f"a {what} is {words}", path=path, expected="integer class labels",
                                  found=f"{a[bad[0]].item()} at row {int(bad[0])} (0-based; "
                                        f"{bad.size} rows in all)",
                                  hint="give the predicted labels (or a score matrix with one "
                                       "column per class)")
    bad = np.flatnonzero((a < 0) | (a >= classes))
    if bad.size:
        found = a[bad[0]].item()
        raise FormatError(f"a {what} outside the classes", path=path, expected=f"labels 0..{classes - 1}",
                          found=(f"{found:.6g}" if isinstance(found, float) else f"{found}")
                          + f" at row {int(bad[0])} (0-based; {bad.size} rows in all)",
                          hint="labels are 0-based class indices in the test set's order")
    return a.astype(np.int64)


def read_labels(path: str | os.PathLike[str], classes: int) -> np.ndarray:
    """Predicted labels, one per test row in official order, from ``.npy``, ``.csv``, ``.tsv`` or ``.txt`` (a table: one
    column of labels, one column of scores per class, or a header naming the :data:`PREDICTION_COLUMNS` and
    :data:`ROW_COLUMNS`; scores become their argmax), checked against ``classes`` classes (:func:`check_labels`)."""
    p = regular_input(path, "predicted labels or scores (.npy, .csv, .tsv, .txt)")
    if p.suffix.lower() == ".npy":
        try:
            a = np.load(p, allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:
            raise FormatError("not a NumPy array of labels", path=p, expected="a .npy of "
                              "integer labels or scores (no pickled objects)", found=str(e)) from e
    else:
        a = _text_values(p, classes)
    return check_labels(a, classes, p)


def input_kind(path: str | os.PathLike[str]) -> str:
    """``"labels"`` (a ``.npy``, or a table of labels or scores), ``"predictions"`` (a prediction
    file) or ``"errors"`` (an error list: every line ``name<TAB>description[<TAB>indices]``)."""
    p = Path(path)
    if p.suffix.lower() == ".npy":
        return "labels"
    lines = [ln for ln in read_text(p, "a prediction file, error list or table of labels")
             .splitlines()[:1000] if ln.strip()]
    if any(ln.strip() in (PREDICTIONS_MAGIC, PREDICTIONS_HEADER) for ln in lines[:200]):
        return "predictions"
    data = [ln.split("\t") for ln in lines if not ln.startswith("#")]
    return "errors" if data and all(len(f) in (2, 3) and not is_number(f[0]) for f in data) else "labels"


def read_inputs(paths: list[str] | list[Path], labels: np.ndarray, classes: int | None = None) -> list[SystemOutput]:
    """Systems from prediction files, error lists, or predicted labels/scores (:func:`read_labels`; :func:`input_kind`
    tells them apart), all about the test set whose ``labels`` are given.

    Every prediction is checked against the ``classes`` classes (default: the labels' range); a
    file of another length, an error list whose ``# n:`` is not the test set's size, a
    prediction file whose labels differ are :class:`~mnistforge.errors.TestSetMismatchError`.
    Systems read from labels carry ``metadata["labels_from"] = "test set"``.
    """
    labels = np.asarray(labels)
    n = int(labels.size)
    k = max(int(classes or 0), int(labels.max()) + 1 if n else 1)
    systems: list[SystemOutput] = []
    for path in paths:
        p = Path(path)
        kind = input_kind(p)
        if kind == "labels":
            pred = read_labels(p, k)
            wrong = pred != labels if pred.size == n else np.ones(pred.size, bool)
            found = [SystemOutput(p.name.split(".")[0], wrong, "", pred, labels, str(p), {"labels_from": "test set"})]
        elif kind == "predictions":
            found = [read_predictions(p)]
        else:   # an error list without a '# n:' line is about this test set
            found = read_error_lists(p, default_n=n)
        for s in found:
            if s.n != n:
                said = " (its '# n:' line)" if s.predictions is None else ""
                raise TestSetMismatchError("the predictions do not match the test set", path=p,
                                           expected=f"{n} predictions (one per test row)",
                                           found=f"{s.n}{said}", hint="predict every row of "
                                           "the test set, in its official order")
            if s.predictions is not None:
                check_labels(s.predictions, k, p)
        systems.extend(found)
    names = [s.name for s in systems]
    if len(set(names)) != len(names):
        raise ConfigError("two systems share a name", expected="distinct file names",
                          found=", ".join(names), hint="rename the files")
    return systems


def load_example(name: str = "keysers2006") -> list[SystemOutput]:
    """Load a bundled example: ``keysers2006`` = four MNIST systems and their combination.

    >>> [(s.name, s.errors) for s in load_example("keysers2006")]
    [('SC', 63), ('SVM', 56), ('IDM', 54), ('CNN', 42), ('CC', 35)]
    """
    if name not in EXAMPLES:
        raise ConfigError("unknown example", expected="one of " + ", ".join(EXAMPLES), found=name)
    text = resources.files("mnistforge").joinpath("data", EXAMPLES[name]).read_text("utf-8")
    systems = read_error_lists(None, text=text)
    for s in systems:
        s.source = f"mnistforge/data/{EXAMPLES[name]}"
    return systems
