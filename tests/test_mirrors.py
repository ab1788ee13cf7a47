"""Mirrors a user controls (MNISTFORGE_MIRRORS, load(mirrors=), fetch --mirror / --from URL) and
a dead host asked once: real HTTP servers on 127.0.0.1 started here, a port that refuses
connections, never the internet, never a mock of requests."""
from __future__ import annotations

import dataclasses
import hashlib
import http.server
import logging
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import mnistforge
from mnistforge.cache import download
from mnistforge.cache.download import fetch, fetch_file, mirror_urls
from mnistforge.cli import main
from mnistforge.errors import ConfigError, DownloadError, HashMismatchError
from mnistforge.registry import RemoteFile, get_file
from mnistforge.cache.mirrors import Mirrors, mirrors, parse_mirrors

from cache_helpers import closed_port, local_server

BODIES = {"one.bin": os.urandom(5000), "two.bin": os.urandom(7000)}


class Handler(http.server.BaseHTTPRequestHandler):
    """Serves ``server.files`` (path -> bytes) and records every request path; 404 otherwise."""

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.server.requests.append(self.path)
        body = self.server.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server():
    with local_server(Handler, requests=[], files={}) as srv:
        yield srv


def remote(name: str, *urls: str) -> RemoteFile:
    body = BODIES[name]
    return RemoteFile(id=f"test/{name}", group="test", name=name, urls=tuple(urls),
                      sha256=hashlib.sha256(body).hexdigest(), size=len(body), pinned=True)


# --------------------------------------------------------------------------- the setting

def test_base_addresses_and_templates(monkeypatch):
    monkeypatch.setenv("MNISTFORGE_MIRRORS", "https://a.example/m/  http://b.example/{file}")
    m = mirrors()
    assert m.before == ("https://a.example/m/{name}/{file}", "http://b.example/{file}")
    assert m.urls("mnist", "x.gz", ["https://r/x.gz"]) == [
        "https://a.example/m/mnist/x.gz", "http://b.example/x.gz", "https://r/x.gz"]
    # an explicit value wins over the environment
    assert mirrors(["https://c.example/{name}-{file}"]).before == ("https://c.example/{name}-{file}",)


def test_the_word_registry_puts_the_registrys_addresses_where_it_stands():
    m = parse_mirrors(["https://a.example/", "registry", "https://b.example/{file}"])
    assert m.urls("mnist", "x.gz", ["https://r/x.gz"]) == [
        "https://a.example/mnist/x.gz", "https://r/x.gz", "https://b.example/x.gz"]
    assert parse_mirrors("registry https://b.example/{file}").urls("g", "f", ["r"]) == \
        ["r", "https://b.example/f"]


def test_no_mirrors_leaves_the_registry_alone(monkeypatch):
    monkeypatch.delenv("MNISTFORGE_MIRRORS", raising=False)
    assert mirrors() == Mirrors()
    rf = get_file("mnist/t10k-labels-idx1-ubyte.gz")
    assert mirror_urls(rf) == list(rf.urls)


@pytest.mark.parametrize("entry, says", [
    ("https://host/{nmae}/{file}", "{nmae}"),
    ("https://host/{name}", "no {file}"),
    ("https://host/{file", "does not parse"),
    ("https://host/{file!r}", "bad placeholder"),
    ("ftp://host/{file}", "not an http(s) address"),
    ("/home/me/mnist", "not an http(s) address"),
])
def test_a_bad_entry_is_a_usage_error_naming_it(entry, says, monkeypatch):
    with pytest.raises(ConfigError, match=r"mirror") as e:
        mirrors([entry])
    assert says in str(e.value) and entry in str(e.value)
    monkeypatch.setenv("MNISTFORGE_MIRRORS", entry)
    with pytest.raises(ConfigError, match="MNISTFORGE_MIRRORS"):
        mirrors()


# --------------------------------------------------------------------------- downloads

def test_dead_registry_host_then_a_user_mirror_one_line_for_the_host(server, tmp_path, caplog):
    """The registry's address refuses connections; the user's mirror (after the registry) serves
    the files: both arrive verified, and one warning names the dead host, once for both files."""
    dead = f"127.0.0.1:{closed_port()}"
    for name, body in BODIES.items():
        server.files[f"/mirror/test/{name}"] = body
    files = [remote(n, f"http://{dead}/pub/{n}") for n in BODIES]
    caplog.set_level(logging.INFO, logger="mnistforge.cache.download")
    seen: set[str] = set()
    got = [fetch_file(f, root=tmp_path, retries=3, backoff=5, dead_hosts=seen,
                      mirrors=["registry", f"{server.base}/mirror/"]) for f in files]
    for f, r in zip(files, got):
        assert r.downloaded and r.status == "exact" and r.url.startswith(server.base)
        assert r.path.read_bytes() == BODIES[f.name]
    assert seen == {dead}
    lines = [r.getMessage() for r in caplog.records if dead in r.getMessage()
             and r.levelno >= logging.WARNING]
    assert len(lines) == 1, lines
    assert "connection refused" in lines[0] and "not asking" in lines[0]
    assert server.requests == ["/mirror/test/one.bin", "/mirror/test/two.bin"]


def test_a_dataset_fetch_shares_the_dead_hosts(server, tmp_path):
    """fetch() of several files (its own set) never asks a refused host twice: a host that
    would refuse the second file is skipped, said in the error."""
    dead = f"127.0.0.1:{closed_port()}"
    f = remote("one.bin", f"http://{dead}/a/one.bin")
    seen = {dead}
    with pytest.raises(DownloadError) as e:
        fetch(f, root=tmp_path, dead_hosts=seen)
    assert f"{dead} skipped (unreachable earlier in this fetch)" in str(e.value)


def test_a_mirror_serving_a_wrong_file_is_refused_and_named(server, tmp_path):
    server.files["/m/test/one.bin"] = BODIES["two.bin"][:5000]  # a wrong file, the right size
    f = remote("one.bin")
    with pytest.raises(HashMismatchError) as e:
        fetch_file(f, root=tmp_path, retries=0, mirrors=[f"{server.base}/m/"])
    msg = str(e.value)
    assert f"{server.base}/m/test/one.bin" in msg and f.sha256 in msg
    assert "nothing was written" in msg
    assert not (tmp_path / "test").exists() or not any((tmp_path / "test").iterdir())


def test_a_wrong_mirror_then_a_good_one(server, tmp_path):
    server.files["/bad/one.bin"] = b"<!DOCTYPE html><html>moved</html>"
    server.files["/good/one.bin"] = BODIES["one.bin"]
    r = fetch_file(remote("one.bin"), root=tmp_path, retries=0,
                   mirrors=[f"{server.base}/bad/{{file}}", f"{server.base}/good/{{file}}"])
    assert r.url == f"{server.base}/good/one.bin" and r.status == "exact"


# --------------------------------------------------------------------------- real files

@pytest.fixture
def mnist_server(server, mnist_reference):
    """The real MNIST test files (a mirror's re-compressed copies) served as a mirror would."""
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        server.files[f"/mirror/mnist/{name}"] = (mnist_reference / name).read_bytes()
    return server


def test_load_with_mirrors_gets_the_real_test_set(mnist_server, tmp_path, monkeypatch):
    monkeypatch.delenv("MNISTFORGE_OFFLINE", raising=False)
    dead = f"127.0.0.1:{closed_port()}"
    ds = mnistforge.load("mnist", "test", cache=tmp_path, download=True,
                         mirrors=[f"http://{dead}/", f"{mnist_server.base}/mirror/"])
    assert len(ds) == 10_000 and ds.labels[:3].tolist() == [7, 2, 1]
    # the user's mirrors came first; the registry's addresses (the internet) were never needed
    assert sorted(mnist_server.requests) == ["/mirror/mnist/t10k-images-idx3-ubyte.gz",
                                             "/mirror/mnist/t10k-labels-idx1-ubyte.gz"]
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")
    again = mnistforge.load("mnist", "test", cache=tmp_path)
    assert (again.images == ds.images).all()


def test_cli_fetch_from_url_and_mirror(mnist_server, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MNISTFORGE_OFFLINE", raising=False)
    tmpl = f"{mnist_server.base}/mirror/{{name}}/{{file}}"
    rc = main(["fetch", "mnist/t10k-labels-idx1-ubyte.gz", "--cache", str(tmp_path / "a"),
               "--from", tmpl])
    out = capsys.readouterr().out
    assert rc == 0 and "downloaded, verified" in out
    monkeypatch.setenv("MNISTFORGE_MIRRORS", f"{mnist_server.base}/mirror/")
    rc = main(["fetch", "mnist/t10k-images-idx3-ubyte.gz", "--cache", str(tmp_path / "b")])
    assert rc == 0 and (tmp_path / "b" / "mnist" / "t10k-images-idx3-ubyte.gz").is_file()
    # --from URL is the only address: a file it lacks is not looked for elsewhere
    mnist_server.requests.clear()
    rc = main(["fetch", "mnist/train-labels-idx1-ubyte.gz", "--cache", str(tmp_path / "c"),
               "--from", tmpl, "--retries", "0"])
    err = capsys.readouterr().err
    assert rc == 3 and "HTTP 404" in err and "ossci" not in err
    assert mnist_server.requests == ["/mirror/mnist/train-labels-idx1-ubyte.gz"]


def test_cli_bad_template_is_a_usage_error_before_any_download(server, tmp_path, capsys):
    rc = main(["fetch", "mnist", "--cache", str(tmp_path), "--mirror", f"{server.base}/{{dataset}}/{{file}}"])
    assert rc == 2 and "{dataset}" in capsys.readouterr().err
    assert server.requests == [] and not tmp_path.joinpath("mnist").exists()


def test_cli_one_line_about_the_dead_host_then_the_files_arrive(mnist_server, tmp_path):
    """A real process: two files, the first mirror refuses; stderr has one line naming it."""
    dead = f"127.0.0.1:{closed_port()}"
    env = dict(os.environ, MNISTFORGE_HOME=str(tmp_path), PYTHONPATH=str(Path(__file__).parents[1]))
    env.pop("MNISTFORGE_OFFLINE", None)
    r = subprocess.run([sys.executable, "-m", "mnistforge", "fetch", "mnist/t10k-images-idx3-ubyte.gz",
                        "mnist/t10k-labels-idx1-ubyte.gz", "--mirror", f"http://{dead}/",
                        "--mirror", f"{mnist_server.base}/mirror/"],
                       capture_output=True, text=True, env=env, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("downloaded, verified") == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and dead in lines[0] and "connection refused" in lines[0], r.stderr


# --------------------------------------------------------------------------- second hosts (issue 45)

@pytest.mark.parametrize("fid", ["emnist/gzip.zip", "kmnist/train-images-idx3-ubyte.gz",
                                 "kmnist/train-labels-idx1-ubyte.gz", "kmnist/t10k-images-idx3-ubyte.gz",
                                 "kmnist/t10k-labels-idx1-ubyte.gz"])
def test_a_dead_first_host_falls_back_to_the_registrys_second(fid, server, tmp_path):
    """The registry's two addresses of the file, their paths served on 127.0.0.1: the first on
    a port that refuses, the second by a real server; the file arrives from the second."""
    real = get_file(fid)
    assert len({download._host(u) for u in real.urls}) >= 2, real.urls   # two HOST:PORTs
    first, second = (urlsplit(u).path for u in real.urls[:2])
    body = os.urandom(4000)   # a stand-in: the real files are not at hand
    server.files[second] = body
    f = dataclasses.replace(real, urls=(f"http://127.0.0.1:{closed_port()}{first}", server.base + second),
                            size=len(body), sha256=hashlib.sha256(body).hexdigest(), md5=None)
    r = fetch_file(f, root=tmp_path, retries=2, backoff=30)   # a refusal is never retried
    assert r.url == server.base + second and r.status == "exact" and r.path.read_bytes() == body
    assert server.requests == [second]


def test_http_and_https_of_one_host_are_two_addresses():
    assert download._host("https://codh.rois.ac.jp/x") != download._host("http://codh.rois.ac.jp/x")
    assert download._host("http://127.0.0.1:8080/x") == "127.0.0.1:8080"


# --------------------------------------------------------------------------- fetch --offline

def test_fetch_offline_says_one_short_line_per_file_and_one_hint(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MNISTFORGE_OFFLINE", raising=False)
    assert main(["fetch", "mnist", "kmnist:test", "--offline", "--cache", str(tmp_path)]) == 3
    err = capsys.readouterr().err.splitlines()
    files = ["mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz",
             "mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz",
             "kmnist/t10k-images-idx3-ubyte.gz", "kmnist/t10k-labels-idx1-ubyte.gz"]
    assert len(err) == len(files) + 1, err
    for line, fid in zip(err, files):
        where = str(tmp_path / fid)
        assert fid in line and where in line and "http" not in line   # no addresses, no hashes
        assert len(line) - len(where) < 70, line
    hint = err[-1]
    assert hint.startswith("hint: --offline forbids downloads: drop --offline")
    assert "mnistforge info mnist" in hint and "https://ossci-datasets" in hint
