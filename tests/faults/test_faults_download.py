"""Download bullets of issue 17 (redirect loops, other schemes, bad Location / Content-Encoding,
endless bodies, trickling servers, --timeout <= 0, concurrent fetches, a read-only cache) and the
network bullets of issue 16 (unreachable hosts in one line, no false blame of MNISTFORGE_OFFLINE).
A real HTTP server on 127.0.0.1, started here; never the internet, never a mock of requests."""
from __future__ import annotations

import hashlib
import http.server
import json
import os
import socket
import textwrap
import threading
import time

import pytest
from faults_helpers import ROOT, cli

from mnistforge.cache.download import _unreachable_reason, fetch
from mnistforge.errors import ConfigError, DownloadError, NotWritableError, OfflineError
from mnistforge.registry import RemoteFile

BODY = os.urandom(4542)
SHA = hashlib.sha256(BODY).hexdigest()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        kind = self.path.split("/")[1]
        self.server.hits.append(kind)
        if kind == "loop":
            return self._redirect(self.path)
        if kind == "ftp":
            return self._redirect("ftp://127.0.0.1/file.bin")
        if kind == "badloc":
            return self._redirect("http://[::1")
        if kind == "badenc":
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", "20")
            self.end_headers()
            self.wfile.write(b"this is not gzip....")
            return
        if kind == "endless":   # no length, bytes for ever
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                while True:
                    self.wfile.write(b"\0" * 65536)
            except (BrokenPipeError, ConnectionResetError):
                return
        if kind == "trickle":   # a byte every 0.2 s, never a whole read timeout
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            try:
                for i in range(len(BODY)):
                    self.wfile.write(BODY[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.2)
            except (BrokenPipeError, ConnectionResetError):
                return
        if kind == "slowok":
            time.sleep(0.5)
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def _redirect(self, where):
        self.send_response(302)
        self.send_header("Location", where)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture(scope="module")
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.hits = []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    srv.base = f"http://127.0.0.1:{srv.server_address[1]}"
    yield srv
    srv.shutdown()
    srv.server_close()


def remote(*urls, size=len(BODY)):
    return RemoteFile(id="test/file.bin", group="test", name="file.bin", urls=tuple(urls),
                      sha256=SHA, size=size, pinned=True)


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("kind,reason", [("loop", "redirect loop"),
                                         ("ftp", "bad redirect"),
                                         ("badloc", "bad redirect"),
                                         ("badenc", "Content-Encoding")])
def test_a_bad_mirror_is_named_and_the_next_one_is_tried(server, tmp_path, kind, reason):
    r = fetch(remote(f"{server.base}/{kind}/file.bin", f"{server.base}/ok/file.bin"),
              root=tmp_path, retries=0)
    assert r.downloaded and r.url.endswith("/ok/file.bin")
    assert (tmp_path / "test" / "file.bin").read_bytes() == BODY
    with pytest.raises(DownloadError, match=reason):
        fetch(remote(f"{server.base}/{kind}/file.bin"), root=tmp_path / "b", retries=0)


def test_an_endless_body_is_cut_at_the_registry_size(server, tmp_path):
    with pytest.raises(DownloadError, match=f"more than {len(BODY)} bytes"):
        fetch(remote(f"{server.base}/endless/file.bin"), root=tmp_path, retries=0)
    # nothing of it is kept (no 4 GiB .part)
    assert not any((tmp_path / "test").glob("*"))


def test_a_trickling_server_hits_the_total_deadline(server, tmp_path):
    with pytest.raises(DownloadError, match="total deadline"):
        fetch(remote(f"{server.base}/trickle/file.bin"), root=tmp_path, retries=0,
              timeout=5, deadline=1)


@pytest.mark.parametrize("timeout", [0, -1, float("nan")])
def test_a_timeout_that_is_not_positive_is_a_usage_error(tmp_path, timeout):
    with pytest.raises(ConfigError, match="timeout"):
        fetch(remote("http://127.0.0.1:9/x"), root=tmp_path, timeout=timeout)


def test_cli_timeout_zero_is_a_usage_error():
    r = cli("fetch", "mnist", "--timeout", "0")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr


def test_refused_connections_in_one_line_with_what_to_do(tmp_path, server):
    port = _closed_port()
    rf = remote(f"http://127.0.0.1:{port}/a/file.bin", f"http://localhost:{port}/b/file.bin")
    t0 = time.monotonic()
    with pytest.raises(DownloadError) as e:
        fetch(rf, root=tmp_path, retries=3, backoff=5)
    msg = str(e.value)
    assert f"cannot reach 127.0.0.1:{port}: connection refused" in msg
    assert "mirrors tried: 2" in msg and SHA in msg and str(tmp_path / "test" / "file.bin") in msg
    assert "\n" not in msg
    # not retried with back-off: 3 retries at 5 s would take 35 s per mirror
    assert time.monotonic() - t0 < 30


def test_name_resolution_failure_is_recognised():
    err = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    wrapped = ConnectionError("HTTPSConnectionPool: Max retries exceeded")
    wrapped.__cause__ = err
    assert _unreachable_reason(wrapped) == "name resolution failed"
    assert _unreachable_reason(ConnectionRefusedError(111, "Connection refused")) == \
        "connection refused"
    assert _unreachable_reason(ConnectionResetError(104, "reset")) is None


def test_download_false_does_not_blame_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("MNISTFORGE_OFFLINE", raising=False)
    with pytest.raises(OfflineError) as e:
        fetch(remote("http://127.0.0.1:9/x"), root=tmp_path, offline=True)
    assert "MNISTFORGE_OFFLINE" not in str(e.value) and "download=False" in str(e.value)
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")
    with pytest.raises(OfflineError, match="MNISTFORGE_OFFLINE"):
        fetch(remote("http://127.0.0.1:9/x"), root=tmp_path)


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True,
                    reason="root writes into read-only folders")
def test_read_only_cache_says_what_happened(server, tmp_path):
    tmp_path.joinpath("home").mkdir(mode=0o555)
    with pytest.raises(NotWritableError, match="MNISTFORGE_HOME"):
        fetch(remote(f"{server.base}/ok/file.bin"), root=tmp_path / "home")


# --------------------------------------------------------------------------- concurrency

FETCHER = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {root!r})
    from mnistforge.cache.download import fetch
    from mnistforge.registry import RemoteFile
    url, sha, size, root = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    r = fetch(RemoteFile(id="test/file.bin", group="test", name="file.bin", urls=(url,),
                         sha256=sha, size=size, pinned=True), root=root)
    print(json.dumps({{"status": r.status, "downloaded": r.downloaded}}))
""")


@pytest.mark.parametrize("attempt", range(3))
def test_two_processes_fetching_one_file_into_an_empty_cache(server, tmp_path, attempt):
    import subprocess
    import sys

    code = FETCHER.format(root=str(ROOT))
    args = [f"{server.base}/slowok/file.bin", SHA, str(len(BODY)), str(tmp_path)]
    procs = [subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    results = [json.loads(o.strip().splitlines()[-1]) for o, _ in outs]
    assert sorted(r["downloaded"] for r in results) == [False, True]   # the loser reused it
    assert (tmp_path / "test" / "file.bin").read_bytes() == BODY
    assert sorted(p.name for p in (tmp_path / "test").iterdir()) == ["file.bin",
                                                                    "file.bin.sha256"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_a_full_disk_during_a_download_is_one_named_error(server, tmp_path):
    from mnistforge.errors import DiskFullError

    (tmp_path / "test").mkdir()
    # the .part lands on /dev/full: every write fails with ENOSPC, as on a full disk
    os.symlink("/dev/full", tmp_path / "test" / "file.bin.part")
    with pytest.raises(DiskFullError) as e:
        fetch(remote(f"{server.base}/ok/file.bin"), root=tmp_path, retries=0)
    assert str(tmp_path / "test" / "file.bin") in str(e.value)
    assert not (tmp_path / "test" / "file.bin").exists()
