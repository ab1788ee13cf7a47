"""Writing the hierarchies: sets (former .mis files), their members, zips or folders, both editions."""
from __future__ import annotations

import io
import logging
import struct
import zlib
from pathlib import Path
from types import TracebackType
from typing import Any, Iterator

import numpy as np

from ...errors import ConfigError
from .. import nist_table as nt
from ..ihead import format_cls, format_mit, write_mis
from .config import ZIP_DATE, SynthConfig
from .plan import Plan
from .render import _Spill

logger = logging.getLogger(__name__)

# --- Hierarchies: sets (former .mis files) and their members ----------------------------------

def _sets(plan: Plan, hierarchy: str) -> Iterator[tuple[str, np.ndarray]]:
    """Yield (set path inside the hierarchy, rows) for every former ``.mis`` file, rows in walk order."""
    rows = plan.rows
    if hierarchy == "by_write":
        for f in plan.folders:
            sl = np.arange(f["start"], f["stop"])
            fields = rows["field"][sl]
            wt = f"{int(f['writer']):04d}_{int(f['template']):02d}"
            for fl in nt.FIELDS:
                r = sl[fields == fl.encode()]
                if len(r):
                    yield f"hsf_{int(f['hsf'])}/f{wt}/{fl}{wt}", r
        return
    if hierarchy == "by_field":
        for p in nt.PARTITION_ORDER:
            for fl in nt.FIELDS:
                sel = np.flatnonzero((rows["hsf"] == p) & (rows["field"] == fl.encode()))
                codes = rows["ascii"][sel]
                for c in np.unique(codes).tolist():
                    yield f"hsf_{p}/{nt.FIELD_DIRS[fl]}/{nt.class_hex(c)}", sel[codes == c]
        return
    merged = hierarchy == "by_merge"
    codes = rows["ascii"].astype(np.int64)
    if merged:
        codes = np.array([nt.merge_class(c) for c in range(256)])[codes]
    for c in np.unique(codes).tolist():
        sel = np.flatnonzero(codes == c)
        name = nt.class_hex(c)
        if merged and chr(c) in nt.MERGED_LETTERS:
            name = f"{nt.class_hex(c)}_{nt.class_hex(ord(chr(c).lower()))}"
        hsf = rows["hsf"][sel]
        for p in nt.PARTITION_ORDER:
            r = sel[hsf == p]
            if len(r):
                yield f"{name}/hsf_{p}", r
        if not merged:
            r = sel[hsf != 4]    # NIST's suggested training set: every partition but hsf_4
            if len(r):
                yield f"{name}/train_{name}", r


def _by_write_paths(plan: Plan) -> np.ndarray:
    """For each row, its by_write ``.mis`` path relative to the by_write root (for ``.mit`` lines)."""
    paths = np.empty(len(plan), dtype=object)
    for set_path, r in _sets(plan, "by_write"):
        paths[r] = f"{set_path}.mis"
    return paths


class _Writer:
    """Writes members of one hierarchy into a zip (sorted names) or a folder."""

    def __init__(self, root: Path, hierarchy: str, packaging: str) -> None:
        self.packaging = packaging
        self.hierarchy = hierarchy
        self.members: list[tuple[str, bytes | int | np.integer[Any]]] = []
        self.root = root

    def add(self, name: str, payload: bytes | int | np.integer[Any]) -> None:
        """``payload``: bytes, or an int row of the spill (resolved at write time)."""
        self.members.append((f"{self.hierarchy}/{name}", payload))

    def write(self, spill: _Spill, bar: Any) -> None:
        self.members.sort(key=lambda m: m[0])
        if self.packaging == "zip":
            self._write_zip(spill, bar)
        else:
            self._write_dir(spill, bar)

    def _data(self, payload: bytes | int | np.integer[Any], spill: _Spill) -> bytes:
        return spill[payload] if isinstance(payload, (int, np.integer)) else payload

    def _write_zip(self, spill: _Spill, bar: Any) -> None:
        dirs: set[str] = set()
        with _StoredZip(self.root / f"{self.hierarchy}.zip") as zf:
            for name, payload in self.members:
                # Directory entries first, as zip tools write them (readers must cope either way).
                parts = name.split("/")[:-1]
                for i in range(1, len(parts) + 1):
                    d = "/".join(parts[:i]) + "/"
                    if d not in dirs:
                        dirs.add(d)
                        zf.add(d, b"")
                zf.add(name, self._data(payload, spill))
                bar.update(1)

    def _write_dir(self, spill: _Spill, bar: Any) -> None:
        made: set[Path] = set()
        for name, payload in self.members:
            path = self.root / name
            if path.parent not in made:
                path.parent.mkdir(parents=True, exist_ok=True)
                made.add(path.parent)
            with open(path, "wb") as f:
                f.write(self._data(payload, spill))
            bar.update(1)


class _StoredZip:
    """A minimal, reproducible zip writer: stored members, fixed timestamps, ZIP64 end records.

    ``zipfile.ZipFile.writestr`` seeks back to patch every local header, which costs ~80 us a member; a synthetic SD19
    has millions of members, so headers are written once here with the CRC computed up front.  The result is an ordinary
    zip that ``zipfile``, ``unzip`` and NIST-zip readers open (checked in the tests).
    """

    _DOS_DATE = ((ZIP_DATE[0] - 1980) << 9) | (ZIP_DATE[1] << 5) | ZIP_DATE[2]
    _DOS_TIME = (ZIP_DATE[3] << 11) | (ZIP_DATE[4] << 5) | (ZIP_DATE[5] // 2)

    def __init__(self, path: Path) -> None:
        self.path = path
        self._f = open(path, "wb")
        self._central: list[bytes] = []
        self._pos = 0

    def __enter__(self) -> _StoredZip:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self._finish()
        self._f.close()

    def add(self, name: str, data: bytes) -> None:
        raw = name.encode("ascii")
        crc = zlib.crc32(data) & 0xFFFFFFFF
        size = len(data)
        if self._pos + size + 30 + len(raw) >= 0xFFFFFFFF or size >= 0xFFFFFFFF:
            raise ConfigError("synthetic zip would exceed 4 GiB", path=self.path, expected="< 4 GiB per hierarchy zip",
                              found=f"member {name}", hint="use packaging='dir' for such a large output")
        is_dir = name.endswith("/")
        header = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, self._DOS_TIME, self._DOS_DATE,
                             crc, size, size, len(raw), 0)
        self._f.write(header + raw + data)
        attr = ((0o40755 << 16) | 0x10) if is_dir else (0o100644 << 16)
        self._central.append(struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, (3 << 8) | 20, 20, 0, 0, self._DOS_TIME,
            self._DOS_DATE, crc, size, size, len(raw), 0, 0, 0, 0, attr, self._pos) + raw)
        self._pos += len(header) + len(raw) + size

    def _finish(self) -> None:
        cd_offset = self._pos
        cd = b"".join(self._central)
        self._f.write(cd)
        n, cd_size = len(self._central), len(cd)
        if n >= 0xFFFF or cd_offset >= 0xFFFFFFFF or cd_size >= 0xFFFFFFFF:
            z64 = cd_offset + cd_size
            self._f.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, (3 << 8) | 45, 45, 0, 0, n, n, cd_size, cd_offset))
            self._f.write(struct.pack("<IIQI", 0x07064B50, 0, z64, 1))
            self._f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF,
                                      min(cd_size, 0xFFFFFFFF), min(cd_offset, 0xFFFFFFFF), 0))
        else:
            self._f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, cd_size, cd_offset, 0))


def _hierarchy_members(config: SynthConfig, plan: Plan, hierarchy: str, writer: _Writer,
                       spill: _Spill, mit_paths: np.ndarray | None) -> None:
    rows = plan.rows
    for set_path, r in _sets(plan, hierarchy):
        base = set_path.rsplit("/", 1)[1]   # '4a/hsf_0' -> 'hsf_0'
        if config.edition == 2:
            width = max(5, len(str(len(r) - 1)))
            for k, row in enumerate(r.tolist()):
                writer.add(f"{set_path}/{base}_{k:0{width}d}.png", row)
            if hierarchy == "by_write" and config.by_write_cls:
                writer.add(f"{set_path}.cls", format_cls(rows["ascii"][r]).encode("ascii"))
            continue
        images = np.empty((len(r), 128, 128), bool)
        for k, row in enumerate(r.tolist()):
            images[k] = np.unpackbits(np.frombuffer(zlib.decompress(spill[row]), np.uint8),
                                      count=128 * 128).reshape(128, 128).astype(bool)
        buf = io.BytesIO()
        write_mis(buf, images, id=f"{base}.mis")
        writer.add(f"{set_path}.mis", buf.getvalue())
        writer.add(f"{set_path}.cls", format_cls(rows["ascii"][r]).encode("ascii"))
        if hierarchy != "by_write":
            assert mit_paths is not None  # the 1st edition's: synthesize_sd19 passes them
            entries = zip(mit_paths[r].tolist(), rows["entry"][r].tolist())
            writer.add(f"{set_path}.mit", format_mit(entries).encode("ascii"))
