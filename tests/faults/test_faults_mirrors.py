"""What a hostile user does to mirrors and adopted copies (issue 29): ``--from`` a FIFO, an empty
or a huge file; a mirror that hangs or serves a web page; a template with a bad placeholder.
Real files, real HTTP servers and sockets on 127.0.0.1, real processes for the CLI."""
from __future__ import annotations

import hashlib
import http.server
import logging
import os
import socket
import struct
import threading

import pytest
from faults_helpers import cli

import mnistforge
from mnistforge.cache.download import fetch_file
from mnistforge.checks.copies import find_copies
from mnistforge.errors import ConfigError, DownloadError, HashMismatchError
from mnistforge.registry import RemoteFile

BODY = os.urandom(3000)
SHA = hashlib.sha256(BODY).hexdigest()
OFFLINE = {"MNISTFORGE_OFFLINE": "1"}


def remote() -> RemoteFile:
    return RemoteFile(id="test/file.bin", group="test", name="file.bin", urls=(), sha256=SHA,
                      size=len(BODY), pinned=True)


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        body = {"good": BODY, "html": b"<!DOCTYPE html>\n<html><body>Moved. Log in.</body></html>"}[
            self.path.split("/")[1]]
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if body is not BODY else "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    srv.base = f"http://127.0.0.1:{srv.server_address[1]}"
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def hanging():
    """A host that accepts connections (the kernel's backlog) and never answers a byte."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    yield f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()


def listing(folder):
    return {str(p): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


# --------------------------------------------------------------------------- --from PATH

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_from_a_fifo_is_one_named_error_and_nothing_blocks(tmp_path):
    fifo = tmp_path / "mnist.npz"
    os.mkfifo(fifo)
    cache = tmp_path / "cache"
    # a read of the FIFO would block for ever: the subprocess timeout is only the guard
    r = cli("fetch", "mnist", "--cache", cache, "--from", fifo, env=OFFLINE, timeout=120)
    assert r.returncode == 1 and "FIFO" in r.stderr and str(fifo) in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not cache.exists()
    # find-copies walks past it (not a regular file), the folder unchanged
    before = listing(tmp_path)
    r = cli("find-copies", "--only", tmp_path, env=OFFLINE, timeout=120)
    assert r.returncode == 0 and "0 copies found" in r.stdout, r.stdout + r.stderr
    assert listing(tmp_path) == before


def test_from_an_empty_file_is_a_format_error_and_the_cache_is_untouched(tmp_path):
    empty = tmp_path / "mnist.npz"
    empty.touch()
    r = cli("fetch", "mnist", "--cache", tmp_path / "cache", "--from", empty, env=OFFLINE)
    assert r.returncode == 1 and "unrecognised file format" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "cache").exists()


def test_from_a_huge_file_with_an_official_name_is_not_read(tmp_path):
    """4 GiB (sparse) behind a valid idx header: no official file has that size, so it is named
    damaged without hashing 4 GiB, and nothing is adopted."""
    big = tmp_path / "copy" / "t10k-images-idx3-ubyte"
    big.parent.mkdir()
    with open(big, "wb") as f:
        f.write(b"\0\0\x08\x03" + struct.pack(">3I", 10_000, 28, 28))
        f.truncate(4 << 30)
    r = cli("fetch", "mnist/t10k-images-idx3-ubyte.gz", "--cache", tmp_path / "cache", "--from",
            big.parent, env=OFFLINE)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "damaged" in r.stdout and f"its size ({4 << 30:,} bytes) is no official file's size" in r.stdout
    assert not (tmp_path / "cache" / "mnist").exists()


def test_from_a_folder_that_is_not_there_is_a_usage_error(tmp_path):
    r = cli("fetch", "mnist", "--from", tmp_path / "nothing", env=OFFLINE)
    assert r.returncode == 2 and "no such file or folder" in r.stderr, r.stderr
    r = cli("find-copies", tmp_path / "nothing", env=OFFLINE)
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_find_copies_names_unreadable_copies_and_changes_nothing(tmp_path):
    (tmp_path / "x_test.npy").write_bytes(b"\x93NUMPY garbage")   # an .npy that does not parse
    (tmp_path / "mnist.npz").write_bytes(b"PK\x03\x04 not really a zip")
    before = listing(tmp_path)
    _, answers = find_copies([tmp_path])
    assert {(os.path.basename(a.path), a.verdict) for a in answers} <= {
        ("x_test.npy", "unknown"), ("x_test.npy", "damaged"), ("mnist.npz", "unknown"),
        ("mnist.npz", "damaged")}
    assert {os.path.basename(a.path) for a in answers} == {"x_test.npy", "mnist.npz"}
    assert all(not a.pieces for a in answers)
    assert listing(tmp_path) == before


# --------------------------------------------------------------------------- mirrors

def test_a_mirror_that_hangs_times_out_and_the_next_one_serves(server, hanging, tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="mnistforge.cache.download")
    r = fetch_file(remote(), root=tmp_path, timeout=0.5, retries=0,
                   mirrors=[f"{hanging}/{{file}}", f"{server.base}/good/{{file}}"])
    assert r.url == f"{server.base}/good/file.bin" and r.status == "exact"
    assert any("timed out" in m and hanging in m for m in caplog.messages), caplog.messages
    with pytest.raises(DownloadError, match="timed out"):
        fetch_file(remote(), root=tmp_path / "b", timeout=0.5, retries=0,
                   mirrors=[f"{hanging}/{{file}}"])


def test_a_mirror_serving_a_web_page_is_refused_and_said_so(server, tmp_path):
    with pytest.raises(HashMismatchError) as e:
        fetch_file(remote(), root=tmp_path, retries=0, mirrors=[f"{server.base}/html/{{file}}"])
    msg = str(e.value)
    assert "served a web page (HTML), not the file" in msg and f"{server.base}/html/file.bin" in msg
    assert not (tmp_path / "test").exists() or list((tmp_path / "test").iterdir()) == []


@pytest.mark.parametrize("entry", ["http://127.0.0.1:9/{nmae}/{file}", "http://127.0.0.1:9/{}",
                                   "http://127.0.0.1:9/{file", "file:///home/me/mnist"])
def test_a_bad_mirror_setting_is_a_usage_error_before_anything_is_read(entry, tmp_path):
    r = cli("fetch", "mnist", "--cache", tmp_path, env={"MNISTFORGE_MIRRORS": entry})
    assert r.returncode == 2 and "MNISTFORGE_MIRRORS" in r.stderr and entry in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "mnist").exists()
    with pytest.raises(ConfigError, match="mirror"):
        mnistforge.load("mnist", "test", cache=tmp_path, mirrors=[entry])
