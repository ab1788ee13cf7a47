"""Finding copies of the datasets already on this machine, and adopting them into the cache
(what ``mnistforge find-copies`` and ``mnistforge fetch NAME --from PATH`` run).

Nothing here writes to, renames in or removes from what it finds.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from .. import settings
from ..cache.adopt import place_in_cache
from ..cache.download import FetchResult, cache_path
from ..errors import FormatError, MnistforgeError, UnsafeFormatError
from ..io.foreign.base import role_of
from ..io.foreign.detect import _npy_partner
from ..io.types import StrPath
from ..log import get_logger
from ..registry import RemoteFile, list_files, torchvision_folders
from .adopt import CopyAnswer, examine, regular_or_folder

logger = get_logger(__name__)

__all__ = ["adopt", "candidates", "find_copies", "well_known_places"]

#: how deep :func:`candidates` looks below a place, and how many entries it visits at most
DEPTH = 5
MAX_ENTRIES = 50_000
#: file names worth reading (their content decides what they are)
SUFFIXES = (".npz", ".npy", ".csv", ".csv.gz", ".mat", ".parquet", ".zip")
IDX_HINTS = ("ubyte", "idx1", "idx2", "idx3")


def well_known_places(cwd: StrPath | None = None, home: StrPath | None = None) -> list[Path]:
    """The folders where other tools keep their copies (those that exist, each once)."""
    cwd = Path(cwd or os.getcwd())
    home = Path(home or Path.home())
    hf_home = settings.current().hf_home or home / ".cache" / "huggingface"
    keras_home = settings.current().keras_home
    places = [keras_home / "datasets" if keras_home else None, home / ".keras" / "datasets",
              settings.current().hf_datasets_cache, hf_home / "hub", hf_home / "datasets", cwd / "data", home / "data",
              Path("/usr/share/datasets")]
    out: list[Path] = []
    for p in places:
        if p is not None and p.is_dir() and p.resolve() not in {q.resolve() for q in out}:
            out.append(p)
    return out


def _interesting(p: Path) -> bool:
    name = p.name.lower()
    if name.startswith("."):
        return False
    return name.endswith(SUFFIXES) or any(h in name for h in IDX_HINTS) or \
        name in {f.name.lower() for f in list_files()}


def _is_torchvision_root(d: Path) -> bool:
    try:   # (a folder without search permission: its entries cannot even be stat'ed)
        return (d / "raw").is_dir() or (d / "processed").is_dir() or any(
            (d / cls / "raw").is_dir() or (d / cls / "processed").is_dir()
            for cls in torchvision_folders())
    except OSError:
        return False


def candidates(place: StrPath) -> Iterator[Path]:
    """Each copy below ``place`` once (see the module doc), in sorted order."""
    place = Path(place)
    try:
        if place.is_file():
            yield place
            return
    except OSError as e:  # a place that cannot be looked at: said, then the others
        logger.warning("cannot look at %s: %s", place, e)
        return
    seen = 0

    def walk(d: Path, depth: int) -> Iterator[Path]:
        nonlocal seen
        if _is_torchvision_root(d):
            yield d
            return
        try:
            entries = sorted(d.iterdir())
        except OSError as err:  # unreadable: said, then the rest
            logger.warning("not searched, cannot list %s: %s", d, err.strerror or err)
            return
        if any(e.name.endswith(".parquet") for e in entries):
            yield d  # the shards of one snapshot (or config)
            return
        for e in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                return
            try:
                st = os.stat(e)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and _interesting(e):
                if e.name.endswith(".npy") and role_of(e.name) == "labels" and _npy_partner(e) is not None:
                    continue  # read with its images file
                yield e
            elif stat.S_ISDIR(st.st_mode) and not e.is_symlink() and depth > 0 and not e.name.startswith("."):
                yield from walk(e, depth - 1)

    yield from walk(place, DEPTH)


def find_copies(places: Iterable[StrPath] | None = None, *,
                search_cache: bool = True) -> tuple[list[Path], list[CopyAnswer]]:
    """Examine every copy in ``places`` (default :func:`well_known_places`); returns the places
    searched and one answer per split or idx file found (read only)."""
    where = [Path(p) for p in places] if places else well_known_places()
    answers: list[CopyAnswer] = []
    done: set[str] = set()
    for place in where:
        for cand in candidates(place):
            key = os.path.realpath(cand)
            if key in done:
                continue
            done.add(key)
            answers.extend(_examine(cand, search_cache))
    return where, answers


def _examine(cand: Path, search_cache: bool) -> list[CopyAnswer]:
    try:
        return examine(cand, search_cache=search_cache)
    except UnsafeFormatError as e:
        return [CopyAnswer(str(cand), "pickle", "", "unknown", message=f"refused, never "
                           f"unpickled: {e}", why_not="a pickle")]
    except FormatError as e:
        # a folder that merely has a raw/ in it (no torchvision class folder, MNIST/...), a file that is not a copy
        classes = torchvision_folders()
        if (cand.is_file() and not _interesting(cand)) or (cand.is_dir() and cand.name not in classes
                                                            and not any((cand / c).is_dir() for c in classes)):
            return []
        return [CopyAnswer(str(cand), "?", "", "unknown", message=f"not readable as a copy: {e}", why_not="unreadable")]
    except (MnistforgeError, OSError, ValueError) as e:
        return [CopyAnswer(str(cand), "?", "", "damaged", message=f"{type(e).__name__}: {e}", why_not="unreadable")]


def adopt(paths: StrPath | Iterable[StrPath], files: Iterable[RemoteFile | str] | None = None, *,
          root: StrPath | None = None) -> tuple[dict[str, tuple[FetchResult, str]], list[CopyAnswer]]:
    """Place in the cache what the copies at ``paths`` give of ``files`` (registry ids; None: anything they give).  A
    file is examined as it is (its errors raised); a folder is walked like a place of :func:`find_copies` (a copy in it
    that cannot be read is said and skipped).  Returns ``({file id: (FetchResult, where)}, answers)``; a piece that
    fails the cache's verification is logged and skipped (another copy may give it)."""
    wanted = None if files is None else {getattr(f, "id", f) for f in files}
    placed: dict[str, tuple[FetchResult, str]] = {}
    answers: list[CopyAnswer] = []
    for path in ([paths] if isinstance(paths, (str, os.PathLike)) else paths):
        p = regular_or_folder(path)
        found = examine(p) if p.is_file() else [a for cand in candidates(p) for a in _examine(cand, True)]
        for ans in found:
            answers.append(ans)
            for piece in ans.pieces:
                if piece.file in placed or (wanted is not None and piece.file not in wanted):
                    continue
                if cache_path(piece.file, root).is_file():
                    continue  # already there: the caller re-verifies it as a fetch would
                try:
                    res = place_in_cache(piece.file, source=piece.source, arrays=piece.array,
                                         root=root, origin=piece.where)
                except MnistforgeError as e:
                    logger.warning("%s: not adopted as %s: %s", piece.where, piece.file, e)
                    continue
                placed[piece.file] = (res, piece.where)
    return placed, answers
