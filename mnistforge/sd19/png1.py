"""128x128 1-bit PNGs as in SD19's 2nd edition: black ink on white.

Convention: in the PNG, sample value 0 (black) is ink and 1 (white) is background,
as in NIST's 2nd-edition files; in the arrays of this package ``True`` is ink.

:func:`encode_png1` writes a minimal, reproducible PNG (greyscale, bit depth 1, filter type 0 on every row, zlib level
6, no ancillary chunks) without Pillow. :func:`decode_png1` / :func:`decode_png1_many` take a fast path for greyscale
1-bit non-interlaced PNGs (chunk walk + ``zlib`` + vectorised unfiltering of the None/Sub/Up filters +
``numpy.unpackbits``) and hand anything else (palette, 8-bit, interlaced, Average/Paeth filters) to Pillow, where ink is
whatever is darker than mid-grey.

>>> import numpy as np
>>> img = np.zeros((128, 128), bool); img[30:90, 60:66] = True
>>> data = encode_png1(img)
>>> data[:8] == PNG_SIGNATURE
True
>>> bool((decode_png1(data) == img).all())
True
"""
from __future__ import annotations

import io
import struct
import zlib
from typing import Iterable, Sequence

import numpy as np
import numpy.typing as npt
from PIL import Image

from ..errors import SD19FormatError

__all__ = ["PNG_SIGNATURE", "encode_png1", "decode_png1", "decode_png1_many"]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SIZE = 128


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


_IEND = _chunk(b"IEND", b"")


def encode_png1(image: npt.ArrayLike) -> bytes:
    """Encode a 2-D bool image (``True`` = ink) as a 1-bit greyscale PNG, ink black.

    The bytes depend only on the pixels (and on zlib's level-6 output, stable
    across zlib versions in practice), so synthetic trees are reproducible.
    """
    image = np.asarray(image, dtype=bool)
    if image.ndim != 2:
        raise ValueError(f"encode_png1 needs a 2-D image, got shape {image.shape}")
    h, w = image.shape
    # sample 1 = white: pack the background, not the ink
    rows = np.packbits(~image, axis=1)
    raw = np.zeros((h, rows.shape[1] + 1), np.uint8)   # leading 0 = filter "None"
    raw[:, 1:] = rows
    ihdr = struct.pack(">IIBBBBB", w, h, 1, 0, 0, 0, 0)
    return b"".join((PNG_SIGNATURE, _chunk(b"IHDR", ihdr), _chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)), _IEND))


def _parse(data: bytes) -> tuple[int, int, int, int, int, bytes]:
    """Return (width, height, bitdepth, colortype, interlace, idat bytes) or raise."""
    if data[:8] != PNG_SIGNATURE:
        raise ValueError("not a PNG (bad signature)")
    pos = 8
    n = len(data)
    ihdr = None
    idat: list[bytes] = []
    while pos + 8 <= n:
        length, kind = struct.unpack_from(">I4s", data, pos)
        body = data[pos + 8:pos + 8 + length]
        if len(body) != length:
            raise ValueError(f"chunk {kind!r} truncated")
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    else:
        raise ValueError("no IEND chunk (file truncated)")
    if ihdr is None or not idat:
        raise ValueError("missing IHDR or IDAT")
    w, h, depth, ctype, _comp, _filt, interlace = ihdr
    return w, h, depth, ctype, interlace, b"".join(idat)


_IHDR = struct.Struct(">IIBBBBB")
_LEN_KIND = struct.Struct(">I4s")


def _fast_raw(data: bytes, size: int) -> bytes | None:
    """Inflated scanlines of a ``size`` x ``size`` 1-bit grey PNG, or None for other kinds.

    The common layout (IHDR, one IDAT, IEND) is read at fixed offsets; anything else goes through the full chunk walk.
    """
    if data[:8] != PNG_SIGNATURE or data[12:16] != b"IHDR":
        raise ValueError("not a PNG (bad signature or no IHDR first)")
    w, h, depth, ctype, _c, _f, interlace = _IHDR.unpack_from(data, 16)
    if (w, h) != (size, size):
        raise ValueError(f"image is {w}x{h}, expected {size}x{size}")
    if depth != 1 or ctype != 0 or interlace != 0:
        return None
    length, kind = _LEN_KIND.unpack_from(data, 33)
    if kind == b"IDAT" and data[49 + length:53 + length] == b"IEND":
        idat = data[41:41 + length]
        if len(idat) != length:
            raise ValueError("IDAT chunk truncated")
    else:
        idat = _parse(data)[5]
    stride = (w + 7) // 8 + 1
    raw = zlib.decompress(idat, 15, stride * h)
    if len(raw) != stride * h:
        raise ValueError(f"decompressed image data has {len(raw)} bytes, expected {stride * h}")
    return raw


def _unfilter(rows: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8] | None:
    """Undo filters 0/1/2 on a batch ``(b, h, stride)``; None when Average/Paeth occur."""
    ftype = rows[..., 0]
    if ftype.max(initial=0) == 0:
        return rows[..., 1:]
    if ftype.max() > 2:
        return None
    out = rows[..., 1:].copy()
    b, h, _ = out.shape
    for i in range(h):  # rows depend on the previous one (Up), so walk rows; vectorised over the batch
        ft = ftype[:, i]
        sub = ft == 1
        if sub.any():
            out[sub, i] = np.cumsum(out[sub, i].astype(np.uint32), axis=-1).astype(np.uint8)
        up = ft == 2
        if up.any() and i > 0:
            out[up, i] = out[up, i] + out[up, i - 1]
    return out


def _pillow_decode(data: bytes) -> np.ndarray:
    im = Image.open(io.BytesIO(data))
    im.load()
    return ~np.asarray(im, dtype=bool) if im.mode == "1" else np.asarray(im.convert("L")) < 128


def decode_png1_many(blobs: Iterable[bytes], *, names: Sequence[str] | None = None,
                     size: int = SIZE) -> npt.NDArray[np.bool_]:
    """Decode many PNGs to bool ``(n, size, size)``, ``True`` = ink (black).

    ``names`` (same length) are used in error messages.  Raises :class:`~mnistforge.errors.SD19FormatError` naming the
    member when a PNG is corrupt or not ``size`` x ``size``.
    """
    blobs = list(blobs)
    n = len(blobs)
    stride = size // 8 + 1
    raws: list[bytes] = []
    slow: list[int] = []
    blank = bytes(stride * size)
    for k, data in enumerate(blobs):
        try:
            raw = _fast_raw(data, size)
        except (ValueError, zlib.error, struct.error) as e:
            name = names[k] if names is not None else f"<PNG #{k}>"
            raise SD19FormatError("corrupt SD19 PNG", path=name, expected=f"a {size}x{size} 1-bit PNG", found=str(e),
                                  hint="re-download or re-copy the file") from None
        if raw is None:
            slow.append(k)
            raw = blank
        raws.append(raw)
    rows = np.frombuffer(b"".join(raws), np.uint8).reshape(n, size, stride)
    fast = np.ones(n, bool)
    fast[slow] = False
    if not slow:
        if (un := _unfilter(rows)) is not None:
            # sample 0 = black = ink: flip the packed bytes, then 0/1 bytes are valid bools
            return np.unpackbits(un ^ np.uint8(0xFF), axis=-1, count=size).view(bool)
    out = np.empty((n, size, size), bool)
    idx = np.flatnonzero(fast)
    if len(idx):
        odd = (rows[idx, :, 0] > 2).any(axis=1)
        slow.extend(idx[odd].tolist())
        idx = idx[~odd]
        un = _unfilter(rows[idx])
        assert un is not None  # the rows with Average/Paeth filters went to the slow list above
        out[idx] = np.unpackbits(un ^ np.uint8(0xFF), axis=-1, count=size).view(bool)
    for k in sorted(slow):
        try:
            img = _pillow_decode(blobs[k])
        except Exception as e:  # Pillow raises many types for broken files
            name = names[k] if names is not None else f"<PNG #{k}>"
            raise SD19FormatError("corrupt SD19 PNG", path=name, expected=f"a {size}x{size} PNG",
                                  found=str(e)) from None
        out[k] = img
    return out


def decode_png1(data: bytes, *, name: str | None = None) -> npt.NDArray[np.bool_]:
    """Decode one PNG to a bool ``(128, 128)`` array, ``True`` = ink (black)."""
    one: npt.NDArray[np.bool_] = decode_png1_many([data], names=None if name is None else [name])[0]
    return one
