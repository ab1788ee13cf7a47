"""SD19 1st-edition files: IHEAD ``.mis`` rasters, ``.cls`` class lists, ``.mit`` back references.

The IHEAD header, the stacked 128 x 128 entries and how their CCITT Group 4 raster goes through libtiff (a minimal TIFF
with PhotometricInterpretation=1, so bit 1 = ink = ``True``; no G4 code of our own): ``docs/sd19.md``.

>>> import io, numpy as np
>>> imgs = np.zeros((2, 128, 128), bool); imgs[1, 40:80, 60:64] = True
>>> buf = io.BytesIO(); _ = write_mis(buf, imgs)
>>> bool((read_mis(buf.getvalue()) == imgs).all())
True
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import os
import re
import struct
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np
import numpy.typing as npt
from PIL import Image

from ..errors import SD19FormatError
from ..io.atomic import atomic_file
from ..io.types import StrPath, Writable

logger = logging.getLogger(__name__)

__all__ = [
    "IheadHeader", "IHEAD_SIZE", "parse_ihead", "format_ihead", "read_mis_header", "g4_decode", "g4_encode", "read_mis",
    "write_mis", "read_cls", "write_cls", "parse_cls", "format_cls", "read_mit", "write_mit", "parse_mit", "format_mit",
]

#: Size of the ASCII header that follows the 8-byte length record.
IHEAD_SIZE = 288
LENGTH_RECORD = 8
ENTRY = 128

# (name, size) in file order; the sizes add up to 288.
_FIELDS = (
    ("id", 80), ("created", 26), ("width", 8), ("height", 8), ("depth", 8), ("density", 8), ("compress", 8),
    ("complen", 8), ("align", 8), ("unitsize", 8), ("sigbit", 1), ("byte_order", 1), ("pix_offset", 8), ("whitepix", 8),
    ("issigned", 1), ("rm_cm", 1), ("tb_bt", 1), ("lr_rl", 1), ("parent", 80), ("par_x", 8), ("par_y", 8),
)
assert sum(s for _, s in _FIELDS) == IHEAD_SIZE
_TEXT = {"id", "created", "parent", "sigbit", "byte_order", "issigned", "rm_cm", "tb_bt", "lr_rl"}

COMPRESS_NONE = 0
COMPRESS_G4 = 2


@dataclasses.dataclass
class IheadHeader:
    """The IHEAD header of a ``.mis`` file (numbers as ints, flags as 1-char strings).

    >>> h = IheadHeader(width=128, height=256, par_x=128, par_y=128)
    >>> h.n_entries
    2
    >>> parse_ihead(format_ihead(h)).height
    256
    """

    id: str = ""
    created: str = ""
    width: int = ENTRY
    height: int = ENTRY
    depth: int = 1
    density: int = 300
    compress: int = COMPRESS_G4
    complen: int = 0
    align: int = 8
    unitsize: int = 8
    sigbit: str = "0"
    byte_order: str = "0"
    pix_offset: int = 0
    whitepix: int = 0
    issigned: str = "0"
    rm_cm: str = "0"
    tb_bt: str = "0"
    lr_rl: str = "0"
    parent: str = ""
    par_x: int = ENTRY
    par_y: int = ENTRY

    @property
    def n_entries(self) -> int:
        """Number of entries stacked in the raster (height / par_y)."""
        return self.height // self.par_y if self.par_y else 0

    @property
    def raster_offset(self) -> int:
        return LENGTH_RECORD + IHEAD_SIZE


def _field_text(raw: bytes) -> str:
    # NIST writes C strings: text up to the first NUL, the rest is padding.
    return raw.split(b"\0", 1)[0].decode("ascii", "replace").strip()


def parse_ihead(data: bytes, path: StrPath | None = None) -> IheadHeader:
    """Parse the length record and IHEAD header at the start of ``data``.

    ``path`` only names the file in error messages.  Raises :class:`~mnistforge.errors.SD19FormatError` when the length
    record is not 288, a numeric field is not a number, or the geometry is not that of a MIS file (depth 1, height a
    multiple of ``par_y``, width ``par_x``).
    """
    where = path if path is not None else "<IHEAD bytes>"
    if len(data) < LENGTH_RECORD + IHEAD_SIZE:
        raise SD19FormatError("IHEAD header truncated", path=where,
                              expected=f"at least {LENGTH_RECORD + IHEAD_SIZE} bytes",
                              found=f"{len(data)} bytes", hint="the file is cut short; re-copy it")
    rec = _field_text(data[:LENGTH_RECORD])
    if rec != str(IHEAD_SIZE):
        raise SD19FormatError("bad IHEAD length record", path=where,
                              expected=f"ASCII '{IHEAD_SIZE}' in the first 8 bytes",
                              found=("zero bytes (the header is zeroed)"
                                     if not data[:LENGTH_RECORD + IHEAD_SIZE].strip(b"\0")
                                     else repr(data[:LENGTH_RECORD])),
                              hint="this is not a NIST .mis file or its header is corrupt; "
                                   "re-copy it from the SD19 distribution")
    values: dict[str, Any] = {}
    pos = LENGTH_RECORD
    for name, size in _FIELDS:
        raw, pos = data[pos:pos + size], pos + size
        text = _field_text(raw)
        if name in _TEXT or text == "":
            values[name] = text if name in _TEXT else 0
            continue
        try:
            values[name] = int(text)
        except ValueError:
            raise SD19FormatError(f"IHEAD field {name!r} is not a number", path=where, expected="ASCII decimal digits",
                                  found=repr(raw), hint="the header is corrupt; re-copy the file") from None
    h = IheadHeader(**values)
    _check_geometry(h, where)
    return h


def _check_geometry(h: IheadHeader, where: StrPath) -> None:
    problems = []
    if h.depth != 1:
        problems.append(f"depth {h.depth} (binary rasters have depth 1)")
    if h.par_x <= 0 or h.par_y <= 0:
        problems.append(f"entry size par_x={h.par_x} par_y={h.par_y}")
    elif h.width != h.par_x:
        problems.append(f"width {h.width} != par_x {h.par_x}")
    elif h.height <= 0 or h.height % h.par_y:
        problems.append(f"height {h.height} not a positive multiple of par_y {h.par_y}")
    if h.compress not in (COMPRESS_NONE, COMPRESS_G4):
        problems.append(f"compress {h.compress} (only 0 = none and 2 = CCITT G4 are used in SD19)")
    if problems:
        raise SD19FormatError("IHEAD header does not describe a MIS raster", path=where,
                              expected="depth 1, width = par_x, height = k * par_y, compress 0 or 2",
                              found="; ".join(problems), hint="the header is corrupt; re-copy the file")


def format_ihead(h: IheadHeader) -> bytes:
    """Serialise ``h`` as the 8-byte length record plus the 288-byte header."""
    out = [str(IHEAD_SIZE).encode("ascii").ljust(LENGTH_RECORD, b"\0")]
    for name, size in _FIELDS:
        v = getattr(h, name)
        b = str(v).encode("ascii")
        limit = size if size == 1 else size - 1   # keep room for the C string's NUL
        if len(b) > limit:
            raise SD19FormatError(f"IHEAD field {name!r} too long", path="<IHEAD writer>",
                                  expected=f"at most {limit} ASCII characters", found=repr(v))
        out.append(b.ljust(size, b"\0"))
    return b"".join(out)


# --- Group 4 through libtiff --------------------------------------------------------------

_BOMB_LOCK = threading.Lock()


@contextlib.contextmanager
def _large_images_allowed() -> Iterator[None]:
    # A by_class train_XX.mis can exceed Pillow's decompression-bomb limit; the size was
    # already validated against the header, so lift the limit for this decode only.
    with _BOMB_LOCK:
        old = Image.MAX_IMAGE_PIXELS
        Image.MAX_IMAGE_PIXELS = None
        try:
            yield
        finally:
            Image.MAX_IMAGE_PIXELS = old


# libtiff reports a bad G4 code word on stderr and goes on decoding garbage (Pillow does not raise): its messages are
# captured at the file-descriptor level around each decode (which _BOMB_LOCK already serialises) and turned into errors.
_LIBTIFF_LINE = re.compile(rb"^(Fax[34]\w*|TIFF\w*|\w*Decode\w*|\w*Strip\w*): ", re.M)


@contextlib.contextmanager
def _libtiff_messages() -> Iterator[list[str]]:
    """Collect what libtiff writes to stderr meanwhile; anything else is passed on."""
    found: list[str] = []
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no usable fd 2 (embedded interpreter): nothing to capture
        yield found
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield found
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read()
            if text:
                other = []
                for line in text.splitlines(keepends=True):
                    if _LIBTIFF_LINE.match(line):
                        found.append(line.decode("utf-8", "replace").strip())
                    else:
                        other.append(line)
                if other:
                    os.write(2, b"".join(other))


def _tiff_wrap(strip: bytes, width: int, height: int, compression: int) -> bytes:
    entries = [  # (tag, type, count, value); type 3 SHORT, 4 LONG
        (256, 4, 1, width), (257, 4, 1, height), (258, 3, 1, 1), (259, 3, 1, compression),
        (262, 3, 1, 1), (273, 4, 1, 0), (277, 3, 1, 1), (278, 4, 1, height), (279, 4, 1, len(strip)),
    ]
    ifd_size = 2 + 12 * len(entries) + 4
    data_offset = 8 + ifd_size
    out = [b"II*\x00", struct.pack("<I", 8), struct.pack("<H", len(entries))]
    for tag, typ, count, value in entries:
        if tag == 273:
            value = data_offset
        if typ == 3:
            out.append(struct.pack("<HHIHH", tag, typ, count, value, 0))
        else:
            out.append(struct.pack("<HHII", tag, typ, count, value))
    out.append(struct.pack("<I", 0))
    out.append(strip)
    return b"".join(out)


def g4_decode(strip: bytes, width: int, height: int, path: StrPath | None = None) -> npt.NDArray[np.bool_]:
    """Decode a raw CCITT Group 4 strip to a bool array ``(height, width)``, ``True`` = bit 1.

    >>> a = np.zeros((128, 128), bool); a[3, 5:9] = True
    >>> bool((g4_decode(g4_encode(a), 128, 128) == a).all())
    True
    """
    tif = _tiff_wrap(bytes(strip), width, height, 4)
    try:
        with _large_images_allowed(), _libtiff_messages() as messages:
            im = Image.open(io.BytesIO(tif))
            im.load()
        arr = np.asarray(im, dtype=bool)
    except (OSError, ValueError, SyntaxError) as e:
        raise SD19FormatError("CCITT Group 4 raster could not be decoded",
                              path=path if path is not None else "<G4 strip>",
                              expected=f"a valid G4 stream of {width}x{height} pixels", found=f"libtiff error: {e}",
                              hint="the raster is corrupt or truncated; re-copy the file") from None
    if messages:  # decoded, but not what was encoded: a corrupt file is never built from
        more = f" (and {len(messages) - 1} more)" if len(messages) > 1 else ""
        raise SD19FormatError("CCITT Group 4 raster is corrupt", path=path if path is not None else "<G4 strip>",
                              expected=f"a valid G4 stream of {width}x{height} pixels",
                              found=f"libtiff: {messages[0]}{more}",
                              hint="the file is damaged; re-copy it from the SD19 distribution")
    if arr.shape != (height, width):
        raise SD19FormatError("CCITT Group 4 raster has the wrong size",
                              path=path if path is not None else "<G4 strip>",
                              expected=f"{height}x{width}", found=f"{arr.shape}")
    return arr


def g4_encode(image: np.ndarray) -> bytes:
    """Encode a 2-D bool array (``True`` = bit 1 = ink) as one raw CCITT Group 4 strip."""
    image = np.ascontiguousarray(image, dtype=bool)
    if image.ndim != 2:
        raise ValueError(f"g4_encode needs a 2-D array, got shape {image.shape}")
    h, w = image.shape
    im = Image.frombytes("1", (w, h), np.packbits(image, axis=1).tobytes())
    buf = io.BytesIO()
    # One strip for the whole raster: an IHEAD file holds a single G4 stream.
    im.save(buf, format="TIFF", compression="group4", tiffinfo={278: h})
    data = buf.getvalue()
    with _large_images_allowed():
        t = Image.open(io.BytesIO(data))
        # Image.open gives a TiffImageFile here, which has tag_v2; Pillow types it as ImageFile
        offsets, counts = t.tag_v2[273], t.tag_v2[279]  # type: ignore[attr-defined]
    if len(offsets) != 1:
        raise RuntimeError(f"libtiff wrote {len(offsets)} strips, expected 1")
    return data[offsets[0]:offsets[0] + counts[0]]


# --- MIS files --------------------------------------------------------------------------

def _read_bytes(path_or_bytes: StrPath | bytes | bytearray | memoryview) -> tuple[bytes, StrPath]:
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes), "<MIS bytes>"
    with open(path_or_bytes, "rb") as f:
        return f.read(), os.fspath(path_or_bytes)


def read_mis_header(path_or_bytes: StrPath | bytes | bytearray | memoryview) -> IheadHeader:
    """Parse only the header of a ``.mis`` file (a path or its bytes)."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return parse_ihead(bytes(path_or_bytes[:LENGTH_RECORD + IHEAD_SIZE]))
    with open(path_or_bytes, "rb") as f:
        return parse_ihead(f.read(LENGTH_RECORD + IHEAD_SIZE), path=path_or_bytes)


#: No CCITT G4 stream holds this many zero bytes in a row (no code word, nor EOFB with its
#: padding, has more than 11 zero bits in a row): a raster zeroed behind its header.  libtiff
#: would decode such a strip silently into blank rows, i.e. blank characters.
G4_ZERO_RUN = bytes(4)


def _check_not_zeroed(strip: bytes, h: IheadHeader, where: StrPath) -> None:
    at = strip.find(G4_ZERO_RUN)
    if at < 0:
        return
    tail = len(strip) - at
    zeros = tail if not strip[at:].strip(b"\0") else None
    found = (f"its last {zeros} of {len(strip)} compressed bytes zeroed" if zeros is not None
             else f"{len(G4_ZERO_RUN)} or more zero bytes in a row at byte {h.raster_offset + at}")
    raise SD19FormatError("G4 raster zeroed: the content disagrees with its IHEAD header", path=where,
                          expected=f"{h.complen} bytes of CCITT G4 data for {h.n_entries} entries "
                                   "(complen), never 4 zero bytes in a row", found=found,
                          hint="the file was damaged (zeroed at the same size); re-copy it from the SD19 distribution")


def read_mis(path_or_bytes: StrPath | bytes | bytearray | memoryview, *,
             name: StrPath | None = None) -> npt.NDArray[np.bool_]:
    """Read every entry of a ``.mis`` file as bool ``(n, par_y, par_x)``, ``True`` = ink.

    ``path_or_bytes`` is a path or the file's bytes (e.g. read from a zip);
    ``name`` names it in errors when bytes are given.

    >>> import io
    >>> imgs = np.zeros((3, 128, 128), bool); imgs[2, 0, 0] = True
    >>> b = io.BytesIO(); _ = write_mis(b, imgs)
    >>> read_mis(b.getvalue()).shape
    (3, 128, 128)
    """
    data, where = _read_bytes(path_or_bytes)
    if name is not None:
        where = name
    h = parse_ihead(data, path=where)
    raster = data[h.raster_offset:]
    if h.compress == COMPRESS_G4:
        if h.complen <= 0:
            raise SD19FormatError("IHEAD complen missing for a G4 raster", path=where,
                                  expected="complen > 0", found=str(h.complen))
        if len(raster) < h.complen:
            raise SD19FormatError("raster truncated", path=where, expected=f"{h.complen} compressed bytes (complen)",
                                  found=f"{len(raster)} bytes after the header",
                                  hint="the file is cut short; re-copy it")
        strip = raster[:h.complen]
        _check_not_zeroed(strip, h, where)
        bits = g4_decode(strip, h.width, h.height, path=where)
    else:
        row = (h.width + 7) // 8
        need = row * h.height
        if len(raster) < need:
            raise SD19FormatError("raster truncated", path=where, expected=f"{need} bytes of uncompressed raster",
                                  found=f"{len(raster)} bytes after the header",
                                  hint="the file is cut short; re-copy it")
        packed = np.frombuffer(raster[:need], np.uint8).reshape(h.height, row)
        bits = np.unpackbits(packed, axis=1, count=h.width).astype(bool)
    if h.whitepix not in (0,):
        bits = ~bits  # white would be bit 1: ink is then bit 0
    return bits.reshape(h.n_entries, h.par_y, h.par_x)


def write_mis(path_or_fileobj: StrPath | Writable, images: npt.ArrayLike, *, id: str = "", created: str = "",
              parent: str = "", compress: int = COMPRESS_G4) -> IheadHeader:
    """Write bool images ``(n, 128, 128)`` (``True`` = ink) as one IHEAD ``.mis`` file.

    G4-compressed by default (as SD19); reproducible (no timestamp unless ``created`` is given).  A path is written
    atomically; a binary file object is written in place. Returns the header written.
    """
    images = np.ascontiguousarray(images, dtype=bool)
    if images.ndim != 3 or images.shape[0] < 1:
        raise ValueError(f"write_mis needs images shaped (n>=1, h, w), got {images.shape}")
    n, ph, pw = images.shape
    raster2d = images.reshape(n * ph, pw)
    if compress == COMPRESS_G4:
        raster = g4_encode(raster2d)
    elif compress == COMPRESS_NONE:
        raster = np.packbits(raster2d, axis=1).tobytes()
    else:
        raise ValueError(f"compress must be 0 or 2, got {compress}")
    h = IheadHeader(id=id, created=created, width=pw, height=n * ph, compress=compress,
                    complen=len(raster) if compress == COMPRESS_G4 else 0, parent=parent, par_x=pw, par_y=ph)
    blob = format_ihead(h) + raster
    if hasattr(path_or_fileobj, "write"):
        path_or_fileobj.write(blob)
    else:
        with atomic_file(path_or_fileobj) as f:
            f.write(blob)
    return h


# --- .cls and .mit ------------------------------------------------------------------------

def _lines(text: str, where: StrPath, kind: str, expected: str) -> list[str]:
    if not (lines := [ln.strip() for ln in text.splitlines() if ln.strip()]):
        raise SD19FormatError(f"empty {kind} file", path=where, expected=expected, found="no lines")
    return lines


def parse_cls(text: str, path: StrPath | None = None) -> npt.NDArray[np.uint8]:
    """Parse ``.cls`` text (count, then one hex ASCII class per line) to ``uint8`` codes."""
    where = path if path is not None else "<.cls text>"
    lines = _lines(text, where, ".cls", "a count line followed by one hex class per entry")
    try:
        count = int(lines[0])
        codes = np.array([int(x, 16) for x in lines[1:]], dtype=np.int64)
    except ValueError as e:
        raise SD19FormatError("malformed .cls file", path=where,
                              expected="a decimal count then hex class codes", found=str(e)) from None
    if count != len(codes):
        raise SD19FormatError(".cls count disagrees with its class lines", path=where,
                              expected=f"{count} class lines (first line)",
                              found=f"{len(codes)} class lines", hint="the file is corrupt")
    if len(codes) and (codes.min() < 0x20 or codes.max() > 0x7e):
        raise SD19FormatError(".cls class out of the ASCII range", path=where,
                              expected="hex codes 30..7a", found=f"{codes.min():x}..{codes.max():x}")
    return codes.astype(np.uint8)


def format_cls(ascii_codes: npt.ArrayLike) -> str:
    codes = [int(c) for c in np.asarray(ascii_codes).ravel()]
    return "".join([f"{len(codes)}\n"] + [f"{c:02x}\n" for c in codes])


def read_cls(path: StrPath) -> npt.NDArray[np.uint8]:
    """Read a ``.cls`` file: ``uint8`` array of ASCII codes, one per entry.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "d0000_14.cls")
    >>> write_cls(p, [0x30, 0x39]); read_cls(p).tolist()
    [48, 57]
    """
    with open(path, "r", encoding="ascii", errors="replace") as f:
        return parse_cls(f.read(), path=path)


def write_cls(path: StrPath, ascii_codes: npt.ArrayLike) -> None:
    """Write a ``.cls`` file (count line, then lower-case hex codes), atomically."""
    with atomic_file(path, "w") as f:
        f.write(format_cls(ascii_codes))


def parse_mit(text: str, path: StrPath | None = None) -> list[tuple[str, int]]:
    """Parse ``.mit`` text (count, then ``path index`` lines)."""
    where = path if path is not None else "<.mit text>"
    lines = _lines(text, where, ".mit", "a count line followed by 'path index' lines")
    try:
        count = int(lines[0])
        entries = [(p, int(idx)) for p, idx in (ln.rsplit(None, 1) for ln in lines[1:])]
    except ValueError as e:
        raise SD19FormatError("malformed .mit file", path=where,
                              expected="a count then 'path index' lines", found=str(e)) from None
    if count != len(entries):
        raise SD19FormatError(".mit count disagrees with its lines", path=where,
                              expected=f"{count} entries (first line)", found=f"{len(entries)} entries")
    return entries


def format_mit(entries: Iterable[tuple[str, int]]) -> str:
    entries = list(entries)
    return "".join([f"{len(entries)}\n"] + [f"{p} {int(i)}\n" for p, i in entries])


def read_mit(path: StrPath) -> list[tuple[str, int]]:
    """Read a ``.mit`` file: list of ``(by_write .mis path, entry index)``."""
    with open(path, "r", encoding="ascii", errors="replace") as f:
        return parse_mit(f.read(), path=path)


def write_mit(path: StrPath, entries: Iterable[tuple[StrPath, int]]) -> None:
    """Write a ``.mit`` file from ``[(mis_path, index), ...]``, atomically."""
    with atomic_file(path, "w") as f:
        f.write(format_mit((str(Path(p).as_posix()) if not isinstance(p, str) else p, i) for p, i in entries))
