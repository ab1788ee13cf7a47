"""fetch() against a real HTTP server on 127.0.0.1 (no mocks), and safe zip handling."""
from __future__ import annotations

import gzip
import hashlib
import http.server
import json
import os
import signal
import threading
import time
import zipfile

import pytest

from mnistforge.errors import (DownloadError, HashMismatchError, MissingFileError,
                               OfflineError, UnsafeArchiveError)
from mnistforge.registry import RemoteFile
from mnistforge.cache import archive
from mnistforge.cache.download import cache_path, fetch
from mnistforge.settings import cache_home as cache_dir
from mnistforge.cache.verify import marker_path

PAYLOAD = os.urandom(300_000)
SHA = hashlib.sha256(PAYLOAD).hexdigest()


class Handler(http.server.BaseHTTPRequestHandler):
    """Routes: /ok/*, /404/*, /slow/*, /cut/* (half, then hang up; Range resumes), /bad/*."""

    def log_message(self, *a):  # keep test output quiet
        pass

    def do_GET(self):
        srv = self.server
        srv.requests.append((self.path, self.headers.get("Range")))
        kind = self.path.split("/")[1]
        body = srv.bodies.get(self.path.split("/", 2)[2], PAYLOAD)
        if kind == "404":
            self.send_error(404)
            return
        if kind == "slow":
            time.sleep(1.5)
        if kind == "stall":  # half the body, then a long pause (Ctrl-C arrives meanwhile)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                time.sleep(3)
                self.wfile.write(body[len(body) // 2:])
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        if kind == "bad":
            body = b"x" + body[1:]
        rng = self.headers.get("Range")
        start = int(rng.split("=")[1].rstrip("-")) if rng else 0
        if rng and kind == "cut":
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            self.send_header("Content-Length", str(len(body) - start))
            self.end_headers()
            self.wfile.write(body[start:])
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            if kind == "cut":
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture(scope="module")
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.requests = []
    srv.bodies = {}
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    srv.base = f"http://127.0.0.1:{srv.server_address[1]}"
    yield srv
    srv.shutdown()
    srv.server_close()


def remote(urls, **kw):
    kw.setdefault("sha256", SHA)
    kw.setdefault("size", len(PAYLOAD))
    return RemoteFile(id="test/file.bin", group="test", name="file.bin", urls=tuple(urls),
                      pinned=bool(kw.get("sha256") or kw.get("content_sha256")), **kw)


def resume_offset(rng):
    return int(rng.split("=")[1].rstrip("-"))


def leftovers(root):
    return sorted(p.name for p in (root / "test").glob("*")) if (root / "test").exists() else []


def test_cache_dir_order(tmp_path, monkeypatch):
    monkeypatch.setenv("MNISTFORGE_HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home"
    assert cache_dir(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv("MNISTFORGE_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if os.name == "posix" and not os.uname().sysname == "Darwin":
        assert cache_dir() == tmp_path / "xdg" / "mnistforge"


def test_success_then_reverified_not_redownloaded(server, tmp_path):
    r = remote([f"{server.base}/ok/a"])
    res = fetch(r, root=tmp_path, retries=0)
    assert res.downloaded and res.status == "exact" and res.url.endswith("/ok/a")
    assert res.path == tmp_path / "test" / "file.bin"
    assert res.path.read_bytes() == PAYLOAD
    assert json.loads(marker_path(res.path).read_text())["sha256"] == SHA
    n = len(server.requests)
    again = fetch(r, root=tmp_path)
    assert not again.downloaded and again.status == "exact"
    assert len(server.requests) == n, "a present file must not be downloaded again"
    assert leftovers(tmp_path) == ["file.bin", "file.bin.sha256"]


def test_changed_file_is_reverified_and_refused(server, tmp_path):
    r = remote([f"{server.base}/ok/b"])
    res = fetch(r, root=tmp_path, retries=0)
    data = bytearray(res.path.read_bytes())
    data[0] ^= 0xFF
    res.path.write_bytes(bytes(data))
    os.utime(res.path, ns=(1, 1))  # mtime changes: the marker no longer vouches for it
    with pytest.raises(HashMismatchError, match="delete it"):
        fetch(r, root=tmp_path, offline=True)


def test_resume_after_cut_connection(server, tmp_path):
    server.requests.clear()
    r = remote([f"{server.base}/cut/c"])
    res = fetch(r, root=tmp_path, retries=2, backoff=0.01)
    assert res.path.read_bytes() == PAYLOAD and res.status == "exact"
    ranges = [rng for path, rng in server.requests if path == "/cut/c"]
    assert len(ranges) == 2 and ranges[0] is None
    # the second request resumes where the kept bytes end (not from 0)
    assert 0 < resume_offset(ranges[1]) <= len(PAYLOAD) // 2
    assert leftovers(tmp_path) == ["file.bin", "file.bin.sha256"]


def test_cut_without_retries_keeps_only_a_part_then_resumes(server, tmp_path):
    r = remote([f"{server.base}/cut/d"])
    with pytest.raises(DownloadError, match="partial download kept"):
        fetch(r, root=tmp_path, retries=0)
    assert leftovers(tmp_path) == ["file.bin.part"]  # never the final name
    kept = (tmp_path / "test" / "file.bin.part").stat().st_size
    assert 0 < kept <= len(PAYLOAD) // 2
    with pytest.raises(OfflineError):
        fetch(r, root=tmp_path, offline=True)  # a .part is not taken for the file
    server.requests.clear()
    res = fetch(r, root=tmp_path, retries=0)
    assert res.path.read_bytes() == PAYLOAD
    assert server.requests == [("/cut/d", f"bytes={kept}-")]


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="needs POSIX signals")
def test_ctrl_c_leaves_no_final_file(server, tmp_path):
    r = remote([f"{server.base}/stall/k"])
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            fetch(r, root=tmp_path, retries=0, timeout=10)
    finally:
        timer.cancel()
    # at most a .part to resume from; never the final name, never a sidecar
    assert leftovers(tmp_path) in ([], ["file.bin.part"])
    assert not cache_path(r, tmp_path).exists()


def test_wrong_hash_deletes_and_explains(server, tmp_path):
    r = remote([f"{server.base}/bad/e"])
    with pytest.raises(HashMismatchError) as e:
        fetch(r, root=tmp_path, retries=0)
    msg = str(e.value)
    assert SHA in msg and "/bad/e" in msg and "nothing was written" in msg
    assert leftovers(tmp_path) == []


def test_404_on_first_mirror_then_second(server, tmp_path):
    server.requests.clear()
    r = remote([f"{server.base}/404/f", f"{server.base}/ok/f"])
    res = fetch(r, root=tmp_path, retries=3, backoff=0.01)
    assert res.url.endswith("/ok/f") and res.path.read_bytes() == PAYLOAD
    # a 404 is not retried
    assert [p for p, _ in server.requests] == ["/404/f", "/ok/f"]


def test_timeout(server, tmp_path):
    r = remote([f"{server.base}/slow/g"])
    with pytest.raises(DownloadError, match="timed out"):
        fetch(r, root=tmp_path, timeout=0.3, retries=0)
    assert leftovers(tmp_path) == []


def test_recompressed_mirror_accepted_by_content(server, tmp_path):
    content = b"idx content" * 1000
    server.bodies["h.gz"] = gzip.compress(content, mtime=123)
    official = gzip.compress(content, mtime=0)
    r = RemoteFile(id="test/h.gz", group="test", name="h.gz", urls=(f"{server.base}/ok/h.gz",),
                   sha256=hashlib.sha256(official).hexdigest(),
                   content_sha256=hashlib.sha256(content).hexdigest(), pinned=True)
    res = fetch(r, root=tmp_path, retries=0)
    assert res.status == "content" and "wrapper differs" in res.text


def test_unpinned_file_is_reported_as_such(server, tmp_path):
    r = remote([f"{server.base}/ok/i"], sha256=None)
    res = fetch(r, root=tmp_path, retries=0)
    assert res.status == "unpinned" and not res.verified and res.sha256 == SHA
    assert "NOT verified" in res.text


def test_offline_mode_never_touches_network(server, tmp_path, monkeypatch):
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")
    server.requests.clear()
    r = remote([f"{server.base}/ok/j"])
    with pytest.raises(OfflineError) as e:
        fetch(r, root=tmp_path)
    assert server.requests == []
    msg = str(e.value)
    assert str(tmp_path / "test" / "file.bin") in msg and f"{server.base}/ok/j" in msg
    assert "MNISTFORGE_OFFLINE" in msg
    # placing the file there by hand is enough
    dest = cache_path(r, tmp_path)
    dest.parent.mkdir(parents=True)
    dest.write_bytes(PAYLOAD)
    assert fetch(r, root=tmp_path).status == "exact"
    assert server.requests == []


def test_offline_message_for_a_registry_file(tmp_path):
    with pytest.raises(OfflineError, match="ossci-datasets"):
        fetch("mnist/t10k-labels-idx1-ubyte.gz", root=tmp_path, offline=True)


# --- archives -------------------------------------------------------------------

def make_zip(path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_members_stream_in_place_sorted(tmp_path):
    z = make_zip(tmp_path / "a.zip", {"gzip/b.txt": b"bee", "gzip/a.txt": b"ay", "x/c": b"c"})
    assert archive.member_names(z) == ["gzip/a.txt", "gzip/b.txt", "x/c"]
    assert archive.member_names(z, "gzip/*") == ["gzip/a.txt", "gzip/b.txt"]
    with archive.open_member(z, "gzip/b.txt") as f:
        assert f.read() == b"bee"
    with pytest.raises(MissingFileError, match="nope"):
        with archive.open_member(z, "nope"):
            pass
    out = archive.safe_extract(z, tmp_path / "out", members="gzip/*")
    assert [p.relative_to(tmp_path / "out").as_posix() for p in out] == ["gzip/a.txt", "gzip/b.txt"]


@pytest.mark.parametrize("bad", ["../evil.txt", "/abs/evil.txt", "ok/../../evil.txt", "C:/evil.txt",
                                 "a\\..\\..\\evil.txt"])
def test_member_escaping_the_folder_is_refused(tmp_path, bad):
    z = make_zip(tmp_path / "bad.zip", {"fine.txt": b"ok", bad: b"evil"})
    target = tmp_path / "t" / "out"
    with pytest.raises(UnsafeArchiveError, match="escape"):
        archive.safe_extract(z, target)
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "t" / "evil.txt").exists()
    assert not target.exists() or not any(target.rglob("*.txt")), "nothing is written"


def test_symlink_member_is_refused(tmp_path):
    z = tmp_path / "link.zip"
    info = zipfile.ZipInfo("link")
    info.external_attr = (0o120777 << 16)
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(UnsafeArchiveError, match="symbolic link"):
        archive.safe_extract(z, tmp_path / "out")


def test_member_claiming_a_huge_size_is_refused(tmp_path):
    z = make_zip(tmp_path / "bomb.zip", {"small.bin": b"\0" * 1000})
    data = bytearray(z.read_bytes())
    # patch the declared uncompressed size (central directory, offset 24) to ~3.9 GB
    cd = data.rfind(b"PK\x01\x02")
    data[cd + 24: cd + 28] = (0xE8000000).to_bytes(4, "little")
    z.write_bytes(bytes(data))
    with pytest.raises(UnsafeArchiveError, match="absurd"):
        archive.safe_extract(z, tmp_path / "out", max_bytes=1 << 30)
    with pytest.raises(UnsafeArchiveError, match="absurd"):
        with archive.open_member(z, "small.bin", max_bytes=1 << 30):
            pass
    assert not (tmp_path / "out" / "small.bin").exists()


def test_compression_ratio_bomb_is_refused(tmp_path):
    z = make_zip(tmp_path / "ratio.zip", {"zeros.bin": b"\0" * (4 << 20)})
    with pytest.raises(UnsafeArchiveError, match="ratio"):
        archive.safe_extract(z, tmp_path / "out", max_ratio=100)
    assert [p.name for p in archive.safe_extract(z, tmp_path / "ok")] == ["zeros.bin"]


def test_bad_zip_is_a_clear_error(tmp_path):
    p = tmp_path / "junk.zip"
    p.write_bytes(b"not a zip")
    with pytest.raises(UnsafeArchiveError, match="not a readable zip"):
        archive.member_names(p)
