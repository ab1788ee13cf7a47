"""Names as users type them: dataset names and aliases, split names and TFDS-style split slices.

Case and ``-``, ``_``, ``/``, ``.``, spaces do not matter; the registry's ``aliases`` count too;
a slice rounds percentages to the nearest row and, as in TFDS, refuses a bound beyond the split
and a slice that selects no rows (``docs/loading.md``).

>>> dataset_name("EMNIST-Letters"), dataset_name("fashion_mnist"), dataset_name("emnist/letters")
('emnist-letters', 'fashion-mnist', 'emnist-letters')
>>> parse_split("train[-10%:]")
('train', '[-10%:]')
>>> rows_of("[:90%]", 60000), rows_of("[-10%:]", 60000), rows_of("[:100]", 10000)
(slice(0, 54000, None), slice(54000, 60000, None), slice(0, 100, None))
"""
from __future__ import annotations

import os
import re

from ..errors import ConfigError, DatasetNotFoundError, EmptySelectionError, IndexRangeError, NoSuchPathError
from ..registry import DatasetInfo, dataset_by_alias, get_dataset, list_datasets, name_key, nearest

__all__ = ["dataset_name", "split_name", "parse_split", "rows_of"]

#: endings of the files a path names (third-party copies, idx files, archives): such a name is a path
_FILE_ENDINGS = (".mat", ".npz", ".npy", ".gz", ".csv", ".parquet", ".arrow", ".zip", ".tar", ".pt",
                 ".pth", ".pkl", ".pickle", ".json", ".tsv", ".png", ".idx", "-ubyte")

_SLICE = re.compile(r"^(?P<split>[^\[\]]+?)\s*(?P<rows>\[[^\[\]]*\])?$")
_BOUND = re.compile(r"^\s*(?P<num>[+-]?\d+(?:\.\d+)?)\s*(?P<pct>%?)\s*$")


def _keyed(text: str, choices: list[str]) -> str | None:
    """The choice ``text`` names: itself, else with case and ``-``, ``_``, ``/``, ``.`` ignored."""
    return text if text in choices else {name_key(c): c for c in choices}.get(name_key(text))


def looks_like_path(text: str) -> bool:
    """Whether a name that is no dataset was meant as a path that is not there ("no such file or
    folder", not "unknown dataset").

    >>> looks_like_path("/data/emnist-letters.mat"), looks_like_path("x.npz"), looks_like_path("emnist/letters")
    (True, True, False)
    """
    text = os.path.expanduser(str(text))
    if os.path.lexists(text):
        return False
    head = text.split(os.sep, 1)[0]
    return (text.startswith((os.sep, ".")) or text.lower().endswith(_FILE_ENDINGS)
            or text.count(os.sep) >= 2 or (os.sep in text and os.path.isdir(head)))


def dataset_name(text: str, *, kinds: tuple[str, ...] = ("dataset",)) -> str:
    """The registry name ``text`` stands for, or DatasetNotFoundError listing the datasets of
    ``kinds`` (``"source"``, ``"archive"`` too for ``fetch``/``info``) with a suggestion
    (:class:`~mnistforge.errors.NoSuchPathError` for a path that is not there).

    >>> dataset_name("MNSIT")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    mnistforge.errors.DatasetNotFoundError: unknown dataset 'MNSIT': ... did you mean 'mnist'?
    """
    text = str(text)
    choices = [n for k in kinds for n in list_datasets(k)]
    alias = dataset_by_alias(text)
    hit = alias if alias in choices and text not in choices else _keyed(text, choices)
    if hit is not None:
        return str(hit)
    others = [n for n in list_datasets(None) if n not in choices]
    if (other := {name_key(n): n for n in others}.get(name_key(text))) is not None:
        kind = get_dataset(other).kind
        raise DatasetNotFoundError(
            f"{other!r} is {'an' if kind[0] in 'aeiou' else 'a'} {kind}, not a dataset of images",
            expected="one of " + ", ".join(choices), found=text, hint=f"`mnistforge fetch {other}` downloads it")
    if looks_like_path(text):
        raise NoSuchPathError("no such file or folder", path=text,
                              expected="an existing file or folder (a folder of idx files or a "
                                       "third-party copy), or a dataset name",
                              found="nothing there", hint="check the path")
    guess = nearest(text, choices)
    raise DatasetNotFoundError(
        f"unknown dataset {text!r}", expected="one of " + ", ".join(choices), found=text,
        hint=(f"did you mean {guess!r}?" if guess else "run `mnistforge info` for the list"))


def split_name(info: DatasetInfo, text: str) -> str:
    """The split of ``info`` that ``text`` names (``-``/``_`` and case ignored), or DatasetNotFoundError.

    >>> split_name(get_dataset("emnist-balanced"), "Train_Without_Validation")
    'train-without-validation'
    """
    if (hit := _keyed(text, list(info.splits))) is not None:
        return hit
    raise DatasetNotFoundError(
        f"unknown split {text!r} of {info.name}", expected="one of " + ", ".join(info.splits),
        found=text, hint=info.split_hint(text))


def parse_split(text: str) -> tuple[str, str | None]:
    """``"train[:90%]"`` -> ``("train", "[:90%]")``; ``"test"`` -> ``("test", None)``."""
    if not (m := _SLICE.match(str(text).strip())):
        raise ConfigError("cannot parse the split", found=repr(text),
                          expected="SPLIT or SPLIT[START:STOP] (rows or percentages, "
                                   "e.g. test[:100], train[:90%], train[-10%:])")
    return m["split"].strip(), m["rows"]


def _bound(text: str, n: int, spec: str) -> int | None:
    if not text.strip():
        return None
    if not (m := _BOUND.match(text)):
        raise ConfigError("bad split slice", found=spec,
                          expected="integers or percentages, e.g. [:100], [:90%], [-10%:]")
    if m["pct"]:
        pct = float(m["num"])
        if not -100 <= pct <= 100:
            raise ConfigError("bad split slice", found=spec, expected="percentages within -100%..100%")
        # nearest row, halves up (TFDS's default "closest" rounding)
        v = int(abs(pct) * n / 100 + 0.5)
        return -v if pct < 0 else v
    if "." in m["num"]:
        raise ConfigError("bad split slice", found=spec, expected="whole rows or a percentage")
    digits = m["num"].lstrip("+-")
    # a bound beyond the split is refused, as TFDS does (a 5000-digit one before int() chokes)
    if len(digits) > 18 or int(digits) > n:
        shown = text.strip() if len(digits) <= 40 else f"a {len(digits)}-digit number"
        short = spec if len(spec) <= 40 else spec[:30] + "...]"
        raise IndexRangeError(f"split slice {short} reaches beyond the split", found=shown,
                              expected=f"row bounds within -{n}..{n} (the split has {n} rows)",
                              hint="use a smaller bound, or a percentage such as [:10%]")
    return int(m["num"])


def rows_of(spec: str, n: int) -> slice:
    """The rows ``[START:STOP]`` (rows or percentages) select among ``n``, as a normalised slice;
    a bound beyond the split (IndexRangeError) and a slice that selects nothing
    (EmptySelectionError: every later step would "succeed" on no data) are refused.

    >>> rows_of("[10:5]", 100)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    mnistforge.errors.EmptySelectionError: split slice [10:5] selects no rows: ...
    """
    inner = spec.strip()[1:-1]
    parts = inner.split(":")
    if len(parts) != 2:
        raise ConfigError("bad split slice", found=spec,
                          expected="[START:STOP] with a colon (a single row is ds[i] after loading)")
    start, stop = (_bound(p, n, spec) for p in parts)
    lo, hi = slice(start, stop).indices(n)[:2]
    if hi <= lo:
        raise EmptySelectionError(
            f"split slice {spec} selects no rows", found=f"rows {lo}..{hi} of {n}",
            expected=f"START before STOP within 0..{n}",
            hint=f"e.g. [{lo}:{min(n, lo + 100)}]" if lo < n else "e.g. [:100] or [-10%:]")
    return slice(lo, hi)
