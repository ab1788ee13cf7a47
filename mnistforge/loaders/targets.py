"""Which dataset a folder holds, and CLI targets (``NAME``, ``NAME:SPLIT``, ``FOLDER[:NAME][:SPLIT]``)."""
from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import overload

from ..errors import ConfigError, DatasetNotFoundError, FormatError, MissingFileError, PathArg, TargetNotFoundError
from ..gate.files import path_facts
from ..gate.source import find_dataset_folder, locate, resolve
from ..io.foreign import sniff
from ..io.hf.repo import is_hf_repo
from ..log import get_logger
from ..registry import get_dataset, get_file, list_datasets
from .names import dataset_name, parse_split, rows_of, split_name

logger = get_logger(__name__)

__all__ = ["TargetText", "detect_dataset", "datasets_in_folder", "foreign_source",
           "parse_target_text", "resolve_target"]


def detect_dataset(folder: PathArg) -> str:
    """Which registry dataset a folder of idx files holds: by the file names; where datasets share
    them (MNIST, Fashion-MNIST, KMNIST) by the build manifest, the folder's name, the labels'
    hashes, else the one the registry marks ``assumed_for_shared_names`` (MNIST)."""
    folder = Path(folder)
    sources = {n: resolve(folder, get_dataset(n)) for n in list_datasets()}  # the gate's, once
    if not (cands := [n for n, src in sources.items() if src.folder is not None]):
        raise MissingFileError(
            "no dataset files recognised", path=folder,
            expected="idx files under official names (e.g. train-images-idx3-ubyte.gz, "
                     "qmnist-test-images-idx3-ubyte.gz, emnist-letters-train-images-idx3-ubyte.gz)",
            found=", ".join(sorted(p.name for p in folder.iterdir())[:8]) or "an empty folder")
    if len(cands) == 1:
        return cands[0]
    # Prefer candidates whose files sit directly in the folder over sub-folders.
    direct = [n for n in cands if sources[n].folder == folder]
    pool = direct or cands
    if len(pool) == 1:
        return pool[0]
    man = sources[pool[0]].manifest_of(folder)
    listed = [n for n in pool if man is not None and man.dataset(n) is not None]
    if len(listed) == 1:      # a build folder says which dataset it holds
        return listed[0]
    if man is not None and man.kind in pool:
        return man.kind
    base = folder.name.lower()
    if named := sorted((n for n in pool if n in base), key=len, reverse=True):
        return named[0]
    for n in pool:   # the labels of any split present (a folder may hold train files only)
        info = get_dataset(n)
        for sp in info.splits.values():
            p = locate(folder, sp.labels) if sp.labels and not sp.is_view else None
            if p is None:
                continue
            try:
                remote = get_file(f"{info.group}/{sp.labels}")
            except KeyError:
                continue
            h = path_facts(p, ("sha256", "content_sha256"))   # the gate's record, or hashed once
            if h.get("sha256") == remote.sha256 or (
                    remote.content_sha256 and h.get("content_sha256") == remote.content_sha256):
                return n
    assumed = [n for n in pool if get_dataset(n).assumed_for_shared_names]
    if len(assumed) == 1 and _share_file_names(pool, together=True):
        others = " or ".join(f"FOLDER:{n}" for n in pool if n != assumed[0])
        logger.info("%s: %s-style file names; assuming %s (say %s otherwise)", folder,
                    get_dataset(assumed[0]).title, assumed[0], others)
        return assumed[0]
    raise ConfigError(
        "the folder holds several datasets", path=folder, expected="one dataset",
        found=", ".join(pool), hint=f"pick one with {folder}:{pool[0]}[:SPLIT]")


def _share_file_names(names: list[str], *, together: bool = False) -> bool:
    """Whether some of ``names`` (all, with ``together``) use the same file names."""
    files = [frozenset(sp.images for sp in get_dataset(n).splits.values() if sp.images) for n in names]
    return len(set(files)) == 1 if together else len(set(files)) < len(files)


def datasets_in_folder(folder: PathArg) -> list[str]:
    """Every registry dataset whose files are in ``folder`` (those sharing names: :func:`detect_dataset`)."""
    by_folder: dict[Path, list[str]] = {}
    folder = Path(folder)
    for n in list_datasets():
        if (f := resolve(folder, get_dataset(n)).folder) is not None:
            by_folder.setdefault(f, []).append(n)
    names: list[str] = []
    for f, ns in by_folder.items():
        if len(ns) > 1 and _share_file_names(ns):
            with contextlib.suppress(ConfigError):  # several distinct datasets side by side: all
                one = detect_dataset(f)
                ns = [one] if one in ns else ns
        names += [n for n in ns if n not in names]
    return names


def _holds_dataset_files(folder: PathArg, name: object = None) -> bool:
    """Whether ``datasets_in_folder(folder)`` is not empty, without hashing (``name`` tried first)."""
    names = list_datasets()
    with contextlib.suppress(DatasetNotFoundError):
        first = dataset_name(name) if isinstance(name, str) else None
        names = [first] + [n for n in names if n != first] if first else names
    return any(find_dataset_folder(folder, get_dataset(n)) is not None for n in names)


def foreign_source(name: object, root: PathArg | None = None) -> bool:
    """Whether ``load(name, root=root)`` (or ``load(name)`` with ``name`` a path) is a third-party
    copy: a file, or a folder that is neither idx files under official names nor our Hub export."""
    if root is None:
        if not isinstance(name, (str, os.PathLike)) or str(name) in list_datasets():
            return False
        root = name
    try:
        mode = os.stat(root).st_mode
    except (OSError, ValueError):
        return False
    if stat.S_ISREG(mode):
        return True
    if not stat.S_ISDIR(mode) or is_hf_repo(root):
        return False  # our export: the loaders' own path
    if _holds_dataset_files(root, name):   # official names: the loaders' own path
        return False
    try:
        sniff(Path(root))  # idx files under other names (Kaggle's t10k-images.idx3-ubyte) count too
    except FormatError:
        return False
    return True


#: ``CONFIG=`` in front of an export target: a config name, then the target
_CONFIG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class TargetText:
    """A target string (``[CONFIG=]NAME[:SPLIT]``, ``PATH[:NAME][:SPLIT]``) taken apart, before
    anything is looked up: ``parts`` between the colons outside ``[...]`` slices, ``config`` the
    ``CONFIG=`` prefix of an export target, ``text`` the target without it.

    >>> t = parse_target_text("rebuilt=build/mnist:test[:10]", config=True)
    >>> t.config, t.text, t.parts
    ('rebuilt', 'build/mnist:test[:10]', ('build/mnist', 'test[:10]'))
    >>> t.path_prefix(lambda p: p == "build/mnist")
    ('build/mnist', ('test[:10]',))
    """

    text: str
    parts: tuple[str, ...]
    config: str | None = None

    def path_prefix(self, exists: Callable[[str], bool] = os.path.isdir,
                    ) -> tuple[str, tuple[str, ...]] | None:
        """``(path, the parts after it)`` for the longest leading parts that ``exists``, else None."""
        for k in range(len(self.parts), 0, -1):
            head = ":".join(self.parts[:k])
            if head and exists(head):
                return head, self.parts[k:]
        return None


def parse_target_text(text: str | os.PathLike[str], *, config: bool = False) -> TargetText:
    """A target string taken apart; ``config``: an export target (``CONFIG=`` split off)."""
    text = os.fspath(text)
    name = None
    if config:
        head, sep, rest = text.partition("=")
        if sep and _CONFIG.fullmatch(head) and rest:
            name, text = head, rest
    return TargetText(text, tuple(re.split(r":(?![^\[]*\])", text)), name)


def _split_of(name: str, split: str | None, root: Path | None = None) -> str | None:
    if split is None:
        return None
    base, rows = parse_split(split)
    full = split_name(get_dataset(name), base)
    count = get_dataset(name).split(full).count
    if rows and root is None and count:
        rows_of(rows, count)  # a bad slice of a registry split is a usage error before any load
    return full + (rows or "")


@overload
def resolve_target(text: PathArg, default_split: str) -> tuple[str, str, Path | None]: ...
@overload
def resolve_target(text: PathArg, default_split: None = None) -> tuple[str, str | None, Path | None]: ...


def resolve_target(text: PathArg, default_split: str | None = None) -> tuple[str, str | None, Path | None]:
    """A CLI target (``NAME``, ``NAME:SPLIT``, ``FOLDER``, ``FOLDER:SPLIT``, ``FOLDER:NAME[:SPLIT]``)
    as ``(name, split, root)``: names matched as :func:`mnistforge.load` matches them, ``root``
    None for a registry name, ``split`` ``default_split`` when not given.

    >>> resolve_target("emnist-letters", default_split="train")
    ('emnist-letters', 'train', None)
    >>> resolve_target("MNIST:test[:100]")
    ('mnist', 'test[:100]', None)
    """
    target = parse_target_text(text)
    text, parts = target.text, list(target.parts)
    found = target.path_prefix(os.path.isdir)
    folder, rest = (found[0], list(found[1])) if found is not None else (None, [])
    if folder is not None:
        name = None
        if rest:
            with contextlib.suppress(DatasetNotFoundError):
                name = dataset_name(rest[0])
                rest.pop(0)
        name = name or detect_dataset(folder)
        if len(rest) > 1:
            raise ConfigError("cannot parse target", found=text, expected="FOLDER, FOLDER:SPLIT or FOLDER:NAME:SPLIT")
        split = rest[0] if rest else default_split
        root = Path(folder)
    else:
        if len(parts) > 2:
            raise ConfigError("cannot parse target", found=text, expected="NAME, NAME:SPLIT, FOLDER or FOLDER:SPLIT",
                              hint="a folder must exist to be used as a target")
        looks_like_path = os.sep in parts[0] or parts[0].startswith(".") or parts[0].startswith("~")
        try:
            name = dataset_name(parts[0])
        except DatasetNotFoundError:
            if looks_like_path and not parts[0].startswith(("emnist/", "EMNIST/")):
                raise TargetNotFoundError("no such folder", path=parts[0],
                                          expected="a folder of idx files, or a dataset name",
                                          found="nothing there") from None
            raise
        split = parts[1] if len(parts) > 1 else default_split
        root = None
    return name, _split_of(name, split, root), root
