"""SD19 file formats: IHEAD/MIS + G4, .cls/.mit, 1-bit PNG, lean zip listing and its safety."""
from __future__ import annotations

import io
import struct
import zipfile

import numpy as np
import pytest
from PIL import Image

from mnistforge.errors import SD19FormatError, UnsafeArchiveError
from mnistforge.sd19 import ihead, png1, zipdir
from mnistforge.sd19.nist_table import CLASS_TOTALS, PARTITIONS, TOTAL_CHARACTERS


def _images(n, seed=0, p=0.05):
    rng = np.random.default_rng(seed)
    imgs = rng.random((n, 128, 128)) < p
    imgs[:, 40:60, 30:90] = True   # strokes as well as speckle
    return imgs


# --- IHEAD / MIS -----------------------------------------------------------------------------

@pytest.mark.parametrize("compress", [ihead.COMPRESS_G4, ihead.COMPRESS_NONE])
def test_mis_round_trip(tmp_path, compress):
    imgs = _images(7)
    p = tmp_path / "d0000_14.mis"
    h = ihead.write_mis(p, imgs, id="d0000_14.mis", compress=compress)
    back = ihead.read_mis(p)
    assert back.dtype == bool and back.shape == (7, 128, 128)
    assert (back == imgs).all()
    hdr = ihead.read_mis_header(p)
    assert (hdr.width, hdr.height, hdr.par_x, hdr.par_y) == (128, 7 * 128, 128, 128)
    assert hdr.compress == compress and hdr.n_entries == 7 and hdr.id == "d0000_14.mis"
    assert hdr == h


def test_ihead_layout_is_the_published_one():
    h = ihead.IheadHeader(id="x.mis", width=128, height=384, complen=1234, par_x=128, par_y=128)
    raw = ihead.format_ihead(h)
    assert len(raw) == 8 + 288
    assert raw[:8].rstrip(b"\0") == b"288"
    # width at 8+80+26, par_y in the last 8 bytes, complen after density+compress
    assert raw[8 + 106:8 + 114].rstrip(b"\0") == b"128"
    assert raw[-8:].rstrip(b"\0") == b"128"
    assert raw[8 + 106 + 40:8 + 106 + 48].rstrip(b"\0") == b"1234"
    assert ihead.parse_ihead(raw) == h


def test_g4_ink_is_bit_one():
    # A G4 strip of an image with a single black run decodes to True exactly there;
    # an all-white image compresses to a few bytes whatever its polarity in Pillow.
    img = np.zeros((128, 128), bool)
    img[64, 10:20] = True
    strip = ihead.g4_encode(img)
    assert (ihead.g4_decode(strip, 128, 128) == img).all()
    white = ihead.g4_encode(np.zeros((128, 128), bool))
    assert len(white) < 40


def test_corrupt_header_names_the_file(tmp_path):
    p = tmp_path / "bad.mis"
    ihead.write_mis(p, _images(2))
    data = bytearray(p.read_bytes())
    data[0:3] = b"999"
    p.write_bytes(bytes(data))
    with pytest.raises(SD19FormatError, match="bad.mis.*length record"):
        ihead.read_mis(p)
    data[0:3] = b"288"
    data[8 + 106:8 + 114] = b"12x\0\0\0\0\0"      # width not a number
    p.write_bytes(bytes(data))
    with pytest.raises(SD19FormatError, match="bad.mis.*'width'"):
        ihead.read_mis(p)
    h = ihead.IheadHeader(width=128, height=200, par_x=128, par_y=128)   # not k * par_y
    with pytest.raises(SD19FormatError, match="multiple of par_y"):
        ihead.parse_ihead(ihead.format_ihead(h))


def test_truncated_raster_names_the_file(tmp_path):
    p = tmp_path / "cut.mis"
    ihead.write_mis(p, _images(3))
    p.write_bytes(p.read_bytes()[:-25])
    with pytest.raises(SD19FormatError, match="cut.mis.*raster truncated"):
        ihead.read_mis(p)
    p.write_bytes(p.read_bytes()[:100])
    with pytest.raises(SD19FormatError, match="cut.mis.*header truncated"):
        ihead.read_mis(p)


def test_cls_and_mit_round_trip(tmp_path):
    codes = [0x30, 0x39, 0x4a, 0x7a]
    ihead.write_cls(tmp_path / "a.cls", codes)
    assert (tmp_path / "a.cls").read_text() == "4\n30\n39\n4a\n7a\n"
    assert ihead.read_cls(tmp_path / "a.cls").tolist() == codes
    entries = [("hsf_0/f0000_14/d0000_14.mis", 0), ("hsf_0/f0000_14/d0000_14.mis", 17)]
    ihead.write_mit(tmp_path / "a.mit", entries)
    assert ihead.read_mit(tmp_path / "a.mit") == entries


def test_cls_count_mismatch_names_the_file(tmp_path):
    p = tmp_path / "d0001_02.cls"
    p.write_text("3\n30\n31\n")
    with pytest.raises(SD19FormatError, match="d0001_02.cls.*count"):
        ihead.read_cls(p)
    (tmp_path / "x.mit").write_text("2\nhsf_0/a.mis 0\n")
    with pytest.raises(SD19FormatError, match="x.mit"):
        ihead.read_mit(tmp_path / "x.mit")


# --- PNG ---------------------------------------------------------------------------------------

def _pillow_png(img, mode="1", **kw):
    b = io.BytesIO()
    im = Image.fromarray(~img) if mode == "1" else Image.fromarray(np.where(img, 0, 255).astype(np.uint8)).convert(mode)
    im.save(b, format="PNG", **kw)
    return b.getvalue()


def test_png_round_trip_and_convention():
    imgs = _images(5, seed=1)
    blobs = [png1.encode_png1(x) for x in imgs]
    assert (png1.decode_png1_many(blobs) == imgs).all()
    # black ink on white, as NIST's files: Pillow sees ink as 0 in a mode "1" image
    im = Image.open(io.BytesIO(blobs[0]))
    assert im.mode == "1" and im.size == (128, 128)
    assert ((np.asarray(im) == 0) == imgs[0]).all()
    # reproducible bytes
    assert png1.encode_png1(imgs[0]) == blobs[0]


@pytest.mark.parametrize("mode", ["1", "L", "RGB", "P"])
def test_png_from_other_writers(mode):
    # Pillow's writer uses Sub/Up/Paeth filters and other colour types: same pixels.
    imgs = _images(4, seed=2)
    blobs = [_pillow_png(x, mode) for x in imgs]
    mixed = blobs + [png1.encode_png1(imgs[0])]
    out = png1.decode_png1_many(mixed)
    assert (out[:4] == imgs).all() and (out[4] == imgs[0]).all()


def test_corrupt_png_names_the_member():
    blob = png1.encode_png1(_images(1)[0])
    with pytest.raises(SD19FormatError, match="x_00003.png"):
        png1.decode_png1_many([blob, blob[:-30]], names=["ok.png", "x_00003.png"])
    with pytest.raises(SD19FormatError, match="expected 128x128"):
        png1.decode_png1(png1.encode_png1(np.zeros((64, 128), bool)), name="small.png")


# --- zip ---------------------------------------------------------------------------------------

def test_zip_listing_matches_zipfile(tmp_path):
    p = tmp_path / "t.zip"
    rng = np.random.default_rng(0)
    payloads = {f"by_write/hsf_0/f{i:04d}.bin": rng.bytes(int(rng.integers(0, 3000))) for i in range(40)}
    with zipfile.ZipFile(p, "w") as z:
        for k, (name, data) in enumerate(sorted(payloads.items())):
            z.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED if k % 2 else zipfile.ZIP_STORED)
        z.writestr("by_write/", b"")
    lst = zipdir.list_zip(p)
    assert lst.names == sorted(payloads)
    got = zipdir.read_members(p, lst, np.arange(len(lst))[::-1])
    assert got == [payloads[n] for n in lst.names[::-1]]
    assert zipdir.list_zip(p, limit=3).names == sorted(payloads)[:3]


def test_zip64_listing(tmp_path):
    p = tmp_path / "z64.zip"
    with zipfile.ZipFile(p, "w", allowZip64=True) as z:
        with z.open("a/b.bin", "w", force_zip64=True) as f:
            f.write(b"payload")
    lst = zipdir.list_zip(p)
    assert zipdir.read_members(p, lst, [0]) == [b"payload"]


@pytest.mark.parametrize("bad", ["../evil.png", "/etc/passwd", "by_write/../../x.png", "C:/x.png",
                                 "by_write\\..\\..\\x.png"])
def test_zip_member_escaping_is_refused(tmp_path, bad):
    p = tmp_path / "bad.zip"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("by_write/ok.png", b"x")
        z.writestr(zipfile.ZipInfo(bad), b"y")
    with pytest.raises(UnsafeArchiveError, match="escapes"):
        zipdir.list_zip(p)


def test_zip_member_claiming_huge_size_is_refused(tmp_path):
    p = tmp_path / "bomb.zip"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("by_write/a.png", b"tiny")
    data = bytearray(p.read_bytes())
    cen = data.rfind(b"PK\x01\x02")
    struct.pack_into("<I", data, cen + 24, 0xFFFFFFF0)        # uncompressed size: ~4 GiB
    p.write_bytes(bytes(data))
    with pytest.raises(UnsafeArchiveError, match="absurd size"):
        zipdir.list_zip(p)
    # and a member whose data would lie past the end of the file
    data = bytearray(p.read_bytes())
    struct.pack_into("<I", data, cen + 24, 4)
    struct.pack_into("<I", data, cen + 20, 10 ** 6)            # compressed size beyond EOF
    p.write_bytes(bytes(data))
    with pytest.raises(UnsafeArchiveError, match="outside the archive"):
        zipdir.list_zip(p)


def test_zip_member_crc_checked(tmp_path):
    p = tmp_path / "crc.zip"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("by_write/a.bin", b"0123456789")
    data = bytearray(p.read_bytes())
    data[data.find(b"0123456789")] = ord("X")
    p.write_bytes(bytes(data))
    lst = zipdir.list_zip(p)
    with pytest.raises(SD19FormatError, match="a.bin.*CRC"):
        zipdir.read_members(p, lst, [0])


# --- the published table -------------------------------------------------------------------------

def test_nist_table_adds_up():
    assert sum(p.total for p in PARTITIONS.values()) == TOTAL_CHARACTERS
    assert [p.total for p in PARTITIONS.values()] == [174415, 162723, 135783, 89210, 82587, 85778, 83759]
    assert sum(CLASS_TOTALS.values()) == TOTAL_CHARACTERS
    assert all(p.const == 0 for n, p in PARTITIONS.items() if n > 2)
