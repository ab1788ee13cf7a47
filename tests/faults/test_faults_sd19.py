"""Item 4 of issue 17 (a corrupt or incomplete SD19 must not build a different dataset with
exit 0) and the SD19 zip bullets (bounded members, invalid UTF-8 names)."""
from __future__ import annotations

import json
import shutil
import struct
import zipfile

import numpy as np
import pytest
from faults_helpers import cli

from mnistforge.errors import SD19FormatError, UnsafeArchiveError
from mnistforge.sd19.ihead import g4_decode, g4_encode
from mnistforge.sd19.zipdir import list_zip


def _strip():
    rng = np.random.default_rng(0)
    a = np.zeros((128, 128), bool)
    a[20:100, 30:90] = rng.random((80, 60)) > 0.5
    return a, bytearray(g4_encode(a))


def test_a_libtiff_bad_code_word_is_an_error_not_garbage(capfd):
    a, s = _strip()
    assert (g4_decode(bytes(s), 128, 128) == a).all()
    s[len(s) // 3] ^= 0xFF      # libtiff: "Fax4Decode: Bad code word", then decodes garbage
    with pytest.raises(SD19FormatError, match="Bad code word"):
        g4_decode(bytes(s), 128, 128)
    assert "Fax4Decode" not in capfd.readouterr().err   # reported in the error, not on stderr


@pytest.fixture(scope="module")
def first_edition(tmp_path_factory):
    from mnistforge.sd19.synth import SynthConfig, synthesize_sd19

    return synthesize_sd19(tmp_path_factory.mktemp("e1") / "sd19",
                           SynthConfig(scale=0.002, edition=1, packaging="dir", fields="d",
                                       hierarchies=("by_write",), workers=1), progress=False)


def test_one_flipped_byte_in_a_mis_file_fails_the_build(first_edition, tmp_path):
    src = tmp_path / "sd19"
    shutil.copytree(first_edition, src)
    mis = sorted((src / "by_write").rglob("d*.mis"))[0]
    b = bytearray(mis.read_bytes())
    b[len(b) // 2] ^= 0xFF
    mis.write_bytes(bytes(b))
    r = cli("build", "qmnist", "--sd19", src, "--out", tmp_path / "out", "--workers", "2")
    assert r.returncode != 0, r.stdout
    assert "corrupt" in r.stderr and mis.name in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


def _drop_partition(sd19, dest, hsf):
    shutil.copytree(sd19, dest)
    z = dest / "by_write.zip"
    tmp = dest / "bw.zip"
    with zipfile.ZipFile(z) as zi, zipfile.ZipFile(tmp, "w") as zo:
        for info in zi.infolist():
            if not info.filename.startswith(f"by_write/{hsf}/"):
                zo.writestr(info, zi.read(info))
    tmp.replace(z)
    return dest


def test_a_missing_partition_fails_unless_allowed_and_is_recorded(tiny_sd19, tmp_path):
    src = _drop_partition(tiny_sd19, tmp_path / "sd19", "hsf_4")
    r = cli("build", "qmnist", "--sd19", src, "--out", tmp_path / "q", "--workers", "1")
    assert r.returncode != 0
    assert "incomplete" in r.stderr and "hsf_4 digits" in r.stderr, r.stderr
    assert "--allow-incomplete" in r.stderr
    assert not (tmp_path / "q").exists()
    r = cli("build", "qmnist", "--sd19", src, "--out", tmp_path / "q", "--workers", "1",
            "--allow-incomplete")
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "q" / "manifest.json").read_text())
    assert any(x.startswith("hsf_4 digits: 0 of") for x in m["inputs"]["sd19"]["missing"])
    assert any("INCOMPLETE" in n for n in m["notes"])


def test_emnist_refuses_an_incomplete_source_too(tiny_sd19, tmp_path):
    src = _drop_partition(tiny_sd19, tmp_path / "sd19", "hsf_0")
    r = cli("build", "emnist-letters", "--sd19", src, "--out", tmp_path / "e", "--workers", "1")
    assert r.returncode != 0 and "hsf_0" in r.stderr, r.stderr
    r = cli("build", "emnist-letters", "--sd19", src, "--out", tmp_path / "e", "--workers", "1",
            "--allow-incomplete")
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "e" / "manifest.json").read_text())
    assert m["inputs"]["sd19_missing"]


def test_a_complete_source_builds_without_notes_of_incompleteness(tiny_sd19, tmp_path):
    r = cli("build", "mnist", "--sd19", tiny_sd19, "--out", tmp_path / "m", "--workers", "1")
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert "missing" not in m["inputs"]["sd19"]


# --------------------------------------------------------------------------- zips

def _zip_with_raw_name(path, raw_name: bytes, data=b"x", flags=0x800):
    """A one-member zip whose central directory holds ``raw_name`` as given."""
    crc = 0
    import zlib
    crc = zlib.crc32(data)
    local = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, flags, 0, 0, 0, crc, len(data),
                        len(data), len(raw_name), 0) + raw_name + data
    cen = struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, flags, 0, 0, 0, crc, len(data),
                      len(data), len(raw_name), 0, 0, 0, 0, 0, 0) + raw_name
    eocd = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 1, 1, len(cen), len(local), 0)
    path.write_bytes(local + cen + eocd)
    return path


def test_invalid_utf8_member_name_is_a_named_error(tmp_path):
    z = _zip_with_raw_name(tmp_path / "by_write.zip", b"by_write/\xff\xfe.png")
    with pytest.raises(SD19FormatError, match="not valid UTF-8"):
        list_zip(z)
    from mnistforge.cache.archive import member_names
    with pytest.raises(UnsafeArchiveError):
        member_names(z)


def test_a_huge_member_is_refused_before_inflating(tmp_path):
    # 64 MiB of zeros deflate to ~64 kB (about 1000:1): refused from the directory alone
    z = tmp_path / "by_class.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("by_class/30/train_30.mis", "w") as f:
            for _ in range(64):
                f.write(bytes(1 << 20))
    with pytest.raises(UnsafeArchiveError, match="absurd size"):
        list_zip(z)


def test_a_png_member_larger_than_any_sd19_png_is_refused(tmp_path):
    z = tmp_path / "by_write.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("by_write/hsf_0/f0000_14/d0000_14/d0000_14_00000.png",
                    np.random.default_rng(0).bytes(2 << 20))
    with pytest.raises(UnsafeArchiveError, match="absurd size"):
        list_zip(z)
