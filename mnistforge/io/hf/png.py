"""PNG codec for batches of grayscale images: reproducible encoding, vectorised decoding.

Two encoders (:data:`PNG_ENCODERS`): ``fast`` (the default: no scanline filter, ISA-L's
deflate) and ``pillow`` (Pillow's exact bytes: its adaptive filters, zlib level 6).  Both
write valid 8-bit grey PNGs that decode to the input pixels, the same bytes run to run.
"""
from __future__ import annotations

import concurrent.futures
import io
import zlib
from collections.abc import Iterable, Sequence
from types import ModuleType

import numpy as np
import numpy.typing as npt
from isal import isal_zlib
from PIL import Image

from ... import settings
from ...errors import ConfigError, FormatError
from ...progress import progress

#: an encoded image as the decoders take it
_Blob = bytes | bytearray | memoryview

#: zlib level of the ``pillow`` encoder (6: within 3% of level 9's size at a third of the time).
PNG_COMPRESS_LEVEL = 6
#: ISA-L level of the ``fast`` encoder (1 and 2 gave the same sizes on MNIST; 3 is larger).
ISAL_LEVEL = 1
#: The PNG encoders by name, with what the dataset card says of each.  ``fast``: filter type 0
#: ("none") on every row, because on MNIST-like images (mostly black, sharp strokes) it gives
#: smaller streams than Pillow's per-row choice, at no cost, and ISA-L's deflate (about 3x zlib's
#: speed); the PNGs are 0.1% smaller than Pillow's on MNIST.  ``pillow``: Pillow's bytes.
PNG_ENCODERS = {"fast": f"no scanline filter, deflate by ISA-L's isal_zlib at level {ISAL_LEVEL}",
                "pillow": f"Pillow's bytes: its per-row filter choice, zlib level {PNG_COMPRESS_LEVEL}"}
#: what ISA-L's inflate raises on a damaged stream
_InflateError: type[Exception] = getattr(isal_zlib, "error")  # typed as an instance by its stub
#: The encoder of ``export hf`` unless ``--png`` says otherwise.
DEFAULT_PNG = "fast"
# Images per task: encoding threads share the work in chunks of this size.
CHUNK = 2_000
# Below this many images one thread does it all.
PARALLEL_MIN = 2 * CHUNK
_PNG_SIG = b"\x89PNG\r\n\x1a\n"
_IEND = b"\0\0\0\0IEND\xaeB`\x82"


def encode_png(image: np.ndarray, compress_level: int = PNG_COMPRESS_LEVEL, *, png: str = DEFAULT_PNG) -> bytes:
    """One grayscale PNG, reproducibly (fixed settings, no ancillary chunks).

    With ``png="pillow"`` the bytes are those Pillow writes (``Image.save(format="PNG",
    compress_level=..., optimize=False)``); see :func:`encode_batch`.

    >>> encode_png(np.zeros((28, 28), np.uint8))[:8]
    b'\\x89PNG\\r\\n\\x1a\\n'
    """
    data, _ = encode_batch(np.asarray(image)[None], compress_level, png=png)
    return data


#: filter type of each candidate, in the order Pillow tries them: none, up, sub, Paeth
_ORDER = np.array([0, 2, 1, 4], np.uint8)
#: images filtered at once: temporaries stay in the CPU cache (~1.6 MB each for 28x28)
_FILTER_BLOCK = 1024


def select_filters(images: np.ndarray) -> np.ndarray:
    """Filter every scanline of N x H x W uint8 images as Pillow's encoder does.

    Returns N x H x (W+1) bytes: the filter type, then the filtered row.  Per row the candidates are tried in
    Pillow's order (none, up, sub, Paeth; average only when optimising, which this package never does) and one
    replaces the current choice only when its cost (PNG's min-sum heuristic: the filtered bytes read as
    signed, summed by magnitude) is strictly lower.

    >>> select_filters(np.array([[[5, 5], [5, 5]]], np.uint8)).tolist()   # sub, then up
    [[[1, 5, 0], [2, 0, 0]]]
    """
    x = np.ascontiguousarray(images, dtype=np.uint8)
    n, h, w = x.shape
    out = np.empty((n, h, w + 1), np.uint8)
    for s in range(0, n, _FILTER_BLOCK):
        _select_block(x[s:s + _FILTER_BLOCK], out[s:s + _FILTER_BLOCK])
    return out


def _select_block(x: np.ndarray, out: np.ndarray) -> None:
    m, h, w = x.shape
    above = np.zeros_like(x)
    above[:, 1:] = x[:, :-1]                   # the first row's "previous" row is black
    left = np.zeros_like(x)
    left[:, :, 1:] = x[:, :, :-1]
    upleft = np.zeros_like(x)
    upleft[:, 1:, 1:] = x[:, :-1, :-1]
    a, b, c = left.astype(np.int16), above.astype(np.int16), upleft.astype(np.int16)
    pa, pb, pc = np.abs(b - c), np.abs(a - c), np.abs(a + b - 2 * c)
    pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, above, upleft))
    # uint8 arithmetic wraps modulo 256, as the C encoder's UINT8 does
    candidates = (x, x - above, x - left, x - pred)
    choice = np.zeros((m, h), np.uint8)
    best = np.empty((m, h), np.int32)
    for k, filtered in enumerate(candidates):
        # |signed byte| = min(v, 256 - v), and 0 - v wraps to 256 - v
        cost = np.minimum(filtered, 0 - filtered).sum(axis=-1, dtype=np.int32)
        if k == 0:
            best[...] = cost
            continue
        take = (best > 0) & (cost < best)
        choice[take] = k
        np.copyto(best, cost, where=take)
    out[:, :, 0] = _ORDER[choice]
    body = out[:, :, 1:]
    body[...] = x
    for k in (1, 2, 3):
        np.copyto(body, candidates[k], where=(choice == k)[:, :, None])


def _chunk(kind: bytes, payload: bytes) -> bytes:
    return (len(payload).to_bytes(4, "big") + kind + payload + zlib.crc32(payload, zlib.crc32(kind)).to_bytes(4, "big"))


def _head(h: int, w: int) -> bytes:
    return _PNG_SIG + _chunk(b"IHDR", w.to_bytes(4, "big") + h.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0]))


def encode_batch(images: np.ndarray, compress_level: int = PNG_COMPRESS_LEVEL, *,
                 png: str = DEFAULT_PNG) -> tuple[bytes, np.ndarray]:
    """Encode N x H x W uint8 images as grayscale PNGs; return ``(data, sizes)``. ``png`` names the encoder
    (:data:`PNG_ENCODERS`).  ``fast``: every row unfiltered, one ISA-L zlib stream per image in a single IDAT chunk.
    ``pillow``: filters chosen for the whole batch at once in NumPy as Pillow chooses them, then one zlib stream per
    image (Pillow's settings: window 15, memory level 9, ``Z_FILTERED``) in a single IDAT chunk: byte-identical to
    Pillow's output for images whose compressed data fits one 64 KiB block (every MNIST-sized image); larger ones go
    through Pillow. ``compress_level`` is the ``pillow`` encoder's zlib level."""
    if png not in PNG_ENCODERS:
        raise ConfigError("unknown PNG encoder", expected=" or ".join(PNG_ENCODERS), found=repr(png))
    images = np.ascontiguousarray(images, dtype=np.uint8)
    if png == "fast":
        return _encode_fast(images)
    n, h, w = images.shape
    rows = select_filters(images).reshape(n, -1)
    head = _head(h, w)
    tail = _chunk(b"IEND", b"")
    blobs = []
    for i in range(n):
        z = zlib.compressobj(compress_level, zlib.DEFLATED, 15, 9, zlib.Z_FILTERED)
        idat = z.compress(rows[i].tobytes()) + z.flush()
        if len(idat) > _PILLOW_BLOCK:  # Pillow would split the stream into several IDATs
            blobs.append(pillow_png(images[i], compress_level))
        else:
            blobs.append(head + _chunk(b"IDAT", idat) + tail)
    sizes = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=n)
    return b"".join(blobs), sizes


def _encode_fast(images: np.ndarray) -> tuple[bytes, np.ndarray]:
    n, h, w = images.shape
    rows = np.zeros((n, h, w + 1), np.uint8)     # filter byte 0 ("none") before every row
    rows[:, :, 1:] = images
    rows = rows.reshape(n, -1)
    head, tail = _head(h, w), _chunk(b"IEND", b"")
    crc_idat = zlib.crc32(b"IDAT")
    compress, crc32 = isal_zlib.compress, zlib.crc32
    blobs = []
    for i in range(n):
        z = compress(rows[i], ISAL_LEVEL)
        blobs.append(b"".join((head, len(z).to_bytes(4, "big"), b"IDAT", z,
                               crc32(z, crc_idat).to_bytes(4, "big"), tail)))
    sizes = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=n)
    return b"".join(blobs), sizes


def pillow_png(image: np.ndarray, compress_level: int = PNG_COMPRESS_LEVEL) -> bytes:
    """One image through Pillow's PNG encoder: the bytes :func:`encode_batch` reproduces."""
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image), mode="L").save(
        buf, format="PNG", compress_level=compress_level, optimize=False)
    return buf.getvalue()


#: Pillow hands the encoder 64 KiB buffers: a longer zlib stream spans several IDAT chunks.
_PILLOW_BLOCK = 65536


def encode_pngs(images: np.ndarray, *, workers: int | None = None, compress_level: int = PNG_COMPRESS_LEVEL,
                desc: str | None = None, png: str = DEFAULT_PNG) -> tuple[bytes, npt.NDArray[np.int64]]:
    """Encode N images to PNG with the encoder ``png``; return ``(data, offsets)`` (all bytes, N+1 int64 offsets).
    Batches of :data:`PARALLEL_MIN` images or more are split over ``workers`` threads (default: every core): zlib and
    NumPy release the GIL, so threads scale like processes without copying images to them.  The result does not depend
    on the number of workers."""
    n = len(images)
    workers = settings.current(workers=workers).workers
    starts = list(range(0, n, CHUNK))
    parts: list[tuple[bytes, np.ndarray] | None] = [None] * len(starts)
    bar = progress(total=n, desc=desc or "PNG", unit="img")
    try:
        if workers > 1 and n >= PARALLEL_MIN:
            with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="mnistforge-png") as pool:
                futs = {pool.submit(encode_batch, np.asarray(images[s:s + CHUNK]), compress_level, png=png): i for i,
                        s in enumerate(starts)}
                for fut in concurrent.futures.as_completed(futs):
                    part = parts[futs[fut]] = fut.result()
                    bar.update(len(part[1]))
        else:
            for i, s in enumerate(starts):
                part = parts[i] = encode_batch(np.asarray(images[s:s + CHUNK]), compress_level, png=png)
                bar.update(len(part[1]))
    finally:
        bar.close()
    done = [p for p in parts if p is not None]  # all of them: a failed batch raised above
    sizes = np.concatenate([p[1] for p in done]) if done else np.zeros(0, np.int64)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return b"".join(p[0] for p in done), offsets


def _png_filtered(blob: _Blob) -> tuple[int, int, bytes] | None:
    """(height, width, filtered scanlines) of an 8-bit grey non-interlaced PNG, else None."""
    blob = bytes(blob)
    if blob[:8] != _PNG_SIG or blob[12:16] != b"IHDR":
        return None
    w, h = int.from_bytes(blob[16:20], "big"), int.from_bytes(blob[20:24], "big")
    depth, ctype, interlace = blob[24], blob[25], blob[28]
    if depth != 8 or ctype != 0 or interlace != 0:
        return None
    # what both encoders write: one IDAT right after IHDR, then IEND (the CRCs are not
    # checked, as before: the zlib stream's own Adler-32 guards the pixels)
    length = int.from_bytes(blob[33:37], "big")
    if blob[37:41] == b"IDAT" and blob[45 + length:] == _IEND:
        return _inflated(h, w, blob[41:41 + length])
    pos, idat = 33, []
    while pos + 8 <= len(blob):
        length = int.from_bytes(blob[pos:pos + 4], "big")
        kind = blob[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat.append(blob[pos + 8:pos + 8 + length])
        elif kind == b"IEND":
            break
        elif kind in (b"PLTE", b"tRNS"):
            return None
        pos += 12 + length
    return _inflated(h, w, b"".join(idat))


def _inflated(h: int, w: int, stream: bytes) -> tuple[int, int, bytes] | None:
    """The scanlines of one zlib stream (ISA-L's inflate: about twice zlib's speed)."""
    try:
        raw = isal_zlib.decompress(stream, bufsize=h * (w + 1))
    except _InflateError:
        return None
    if len(raw) != h * (w + 1):
        return None
    return h, w, raw


def _unfilter(raw: np.ndarray) -> np.ndarray:
    """Undo PNG scanline filters for a batch: raw is N x H x (W+1) uint8 (1 byte per pixel)."""
    n, h, w1 = raw.shape
    w = w1 - 1
    ft = raw[:, :, 0]
    top = int(ft.max(initial=0))
    if top > 4:
        raise FormatError("PNG: unknown scanline filter", expected="filter types 0..4", found=f"type {top}")
    if top == 0:              # every row unfiltered (the fast encoder's PNGs): the rows as they are
        return np.ascontiguousarray(raw[:, :, 1:])
    out = np.empty((n, h, w), np.uint8)
    zero = np.zeros((n, w), np.uint8)
    for r in range(h):
        cur = raw[:, r, 1:]
        prior = out[:, r - 1] if r else zero
        f = ft[:, r]
        row = cur.copy()
        m = f == 1
        if m.any():
            row[m] = np.cumsum(cur[m], axis=1, dtype=np.uint8)
        m = f == 2
        if m.any():
            row[m] = cur[m] + prior[m]
        for kind in (3, 4):
            m = np.flatnonzero(f == kind)
            if not len(m):
                continue
            c, b = cur[m].astype(np.int16), prior[m].astype(np.int16)
            res = np.empty_like(c)
            left = np.zeros(len(m), np.int16)
            upleft = np.zeros(len(m), np.int16)
            for j in range(w):
                if kind == 3:
                    pred = (left + b[:, j]) >> 1
                else:
                    a, bb = left, b[:, j]
                    p = a + bb - upleft
                    pa, pb, pc = np.abs(p - a), np.abs(p - bb), np.abs(p - upleft)
                    pred = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, bb, upleft))
                left = (c[:, j] + pred) & 0xFF
                res[:, j] = left
                upleft = b[:, j]
            row[m] = res.astype(np.uint8)
        out[:, r] = row
    return out


def _pillow(Image: ModuleType, blob: _Blob, i: int) -> np.ndarray:
    """One image through Pillow; a corrupt one is a :class:`FormatError`, not Pillow's error."""
    try:
        img = Image.open(io.BytesIO(bytes(blob)))
        return np.asarray(img if img.mode == "L" else img.convert("L"))
    except (OSError, SyntaxError, ValueError, zlib.error) as e:
        raise FormatError(f"PNG image {i} does not decode", expected="a valid PNG", found=f"{type(e).__name__}: {e}",
                          hint="the shard is corrupt: re-export it (or verify the folder)") from None


def decode_pngs(blobs: Iterable[_Blob], shape: Sequence[int] | None = None) -> np.ndarray:
    """Decode grayscale PNGs to an N x H x W uint8 array.

    8-bit grey PNGs (what :func:`encode_png` writes) take a vectorised path (zlib + batch un-filtering);
    anything else goes through Pillow.  Every image must have the same size.

    >>> a = np.arange(784, dtype=np.uint8).reshape(28, 28)
    >>> bool((decode_pngs([encode_png(a)])[0] == a).all())
    True
    """
    blobs = list(blobs)
    n = len(blobs)
    if n == 0:
        return np.zeros((0,) + tuple(shape or (28, 28)), np.uint8)
    parsed = [_png_filtered(b) for b in blobs]
    sizes = {(p[0], p[1]) for p in parsed if p is not None}
    hw = None
    if len(sizes) == 1:
        hw = sizes.pop()
    elif not sizes:
        first = _pillow(Image, blobs[0], 0)
        hw = (first.shape[0], first.shape[1])
    else:
        raise FormatError("PNG images of different sizes", expected="one size",
                          found=", ".join(f"{h}x{w}" for h, w in sorted(sizes)))
    out = np.empty((n,) + hw, np.uint8)
    fast = np.array([p is not None and (p[0], p[1]) == hw for p in parsed])
    if fast.any():
        raw = np.frombuffer(b"".join(p[2] for p, ok in zip(parsed, fast) if ok and p is not None), np.uint8)
        out[fast] = _unfilter(raw.reshape(-1, hw[0], hw[1] + 1))
    for i in np.flatnonzero(~fast):
        arr = _pillow(Image, blobs[i], int(i))
        if arr.shape != hw:
            raise FormatError(f"PNG image {i} has another size", expected=f"{hw[0]}x{hw[1]}",
                              found=f"{arr.shape[0]}x{arr.shape[1]}")
        out[i] = arr
    return out


