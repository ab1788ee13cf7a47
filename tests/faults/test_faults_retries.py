"""Issue 41, retries: a server that answers 500 for ever cannot hold a fetch longer than its
``give_up_after`` (the back-off is capped and never waits past it), and the error names the
host and what it answered.  A real HTTP server on 127.0.0.1, started here; never a mock."""
from __future__ import annotations

import http.server
import threading

import pytest
from faults_helpers import cli

from mnistforge.cache.download import MAX_BACKOFF_WAIT, fetch
from mnistforge.errors import ConfigError, DownloadError
from mnistforge.registry import RemoteFile


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.server.hits += 1
        self.send_response(500, "Internal Server Error")
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.hits = 0
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    srv.base = f"http://127.0.0.1:{srv.server_address[1]}"
    yield srv
    srv.shutdown()
    srv.server_close()


def remote(*urls):
    return RemoteFile(id="test/file.bin", group="test", name="file.bin", urls=tuple(urls),
                      sha256="0" * 64, size=10, pinned=True)


def test_an_hour_of_backoff_stops_at_give_up_after(server, tmp_path):
    # 100 retries with a first wait of an hour: the first wait would already pass the limit
    with pytest.raises(DownloadError) as e:
        fetch(remote(f"{server.base}/file.bin"), root=tmp_path, retries=100, backoff=3600,
              give_up_after=1)
    msg = str(e.value)
    host = server.base.removeprefix("http://")
    assert f"{host} answered HTTP 500 Internal Server Error" in msg
    assert "gave up after 1 s" in msg and "after 1 attempts" in msg
    assert server.hits == 1 and MAX_BACKOFF_WAIT <= 60


def test_later_mirrors_are_not_tried_past_the_limit(server, tmp_path):
    urls = [f"{server.base}/{i}/file.bin" for i in range(3)]
    with pytest.raises(DownloadError, match=r"the fetch gave up after 0.2 s") as e:
        fetch(remote(*urls), root=tmp_path, retries=3, backoff=0.05, give_up_after=0.2)
    # each mirror is either not tried or not retried once the limit is near (how many attempts
    # fit in 0.2 s depends on the machine: only the bound is asserted)
    assert str(e.value).count("gave up after") == 3 and server.hits <= 3 * 4


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf")])
def test_a_give_up_after_that_is_not_positive_and_finite_is_a_usage_error(tmp_path, value):
    with pytest.raises(ConfigError, match="give_up_after"):
        fetch(remote("http://127.0.0.1:9/file.bin"), root=tmp_path, give_up_after=value)


def test_cli_give_up_after(server, tmp_path):
    r = cli("fetch", "mnist/t10k-labels-idx1-ubyte.gz", "--cache", tmp_path / "c", "--from",
            server.base, "--retries", "100", "--give-up-after", "1", timeout=60)
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr
    assert "answered HTTP 500" in r.stderr + r.stdout and "gave up after 1 s" in r.stderr + r.stdout
    assert "--give-up-after" in cli("fetch", "--help").stdout
