"""One settings object: mnistforge reads the environment only in settings.py and never writes it;
the command line's --cache / --offline / --no-progress hold in-process through settings.using;
the documented list of variables is the list settings reads."""
from __future__ import annotations

import ast
import contextvars
import os
import re
import threading
from pathlib import Path

import pytest

from mnistforge import cli, settings
from mnistforge.cache.mirrors import mirrors
from mnistforge.errors import ConfigError
from mnistforge.io.workers import process_pool

PKG = Path(__file__).resolve().parents[1] / "mnistforge"
DOCS = PKG.parent / "docs"

#: modules allowed to read the environment, with the reason (writing it is allowed nowhere)
MAY_READ_ENVIRONMENT = {"settings.py": "the one place every setting is read"}
#: names of ``os`` that read or write the environment
ENV_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}
WRITERS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _modules():
    return sorted(PKG.rglob("*.py"))


def _is_os_env(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr in ENV_NAMES
            and isinstance(node.value, ast.Name) and node.value.id == "os")


def environment_uses(tree: ast.AST) -> tuple[list[str], list[str]]:
    """(writes, reads) of the environment in one module, as ``line: what`` strings."""
    writes, reads = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            reads += [f"{node.lineno}: from os import {a.name}" for a in node.names
                      if a.name in ENV_NAMES]
        targets = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            base = t.value if isinstance(t, (ast.Subscript, ast.Attribute)) else t
            if _is_os_env(base) or _is_os_env(t):
                writes.append(f"{node.lineno}: {ast.unparse(t)} assigned or deleted")
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in WRITERS and _is_os_env(f.value):
                writes.append(f"{node.lineno}: {ast.unparse(f)}()")
            if _is_os_env(f) and f.attr in ("putenv", "unsetenv"):
                writes.append(f"{node.lineno}: {ast.unparse(f)}()")
        if _is_os_env(node):
            reads.append(f"{node.lineno}: {ast.unparse(node)}")
    return writes, reads


def test_the_checker_sees_every_way_of_touching_the_environment():
    src = ("import os\nfrom os import environ\nos.environ['A'] = '1'\ndel os.environ['A']\n"
           "os.environ.update(A='1')\nos.environ.setdefault('A', '1')\nos.environ.pop('A')\n"
           "os.putenv('A', '1')\nx = os.getenv('A')\nenv = os.environ\n")
    writes, reads = environment_uses(ast.parse(src))
    assert [w.split(":")[0] for w in writes] == ["3", "4", "5", "6", "7", "8"], writes
    assert any("from os import environ" in r for r in reads) and any("getenv" in r for r in reads)
    assert environment_uses(ast.parse("import os\nos.path.join('a')\n")) == ([], [])


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_no_module_writes_the_environment_and_only_settings_reads_it(path):
    writes, reads = environment_uses(ast.parse(path.read_text()))
    assert not writes, f"{path.relative_to(PKG)} writes the environment: {writes}"
    if str(path.relative_to(PKG)) not in MAY_READ_ENVIRONMENT:
        assert not reads, (f"{path.relative_to(PKG)} reads the environment itself: {reads}; "
                           "read it through mnistforge.settings")


# --- the documented list ----------------------------------------------------------------------

def variables_read_by_settings() -> set[str]:
    """Every literal name ``settings.py`` looks up (``env.get("X")``, ``os.environ.get("X")``)."""
    names = set()
    for node in ast.walk(ast.parse((PKG / "settings.py").read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get" and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names.add(node.args[0].value)
    return names


def documented_variables() -> set[str]:
    """The variables of the table under ``## Environment variables`` in docs/usage.md."""
    text = (DOCS / "usage.md").read_text()
    section = text.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return {m for cell in rows for m in re.findall(r"`([A-Z][A-Z0-9_]+)", cell)}


def test_the_documented_variables_are_the_ones_settings_reads():
    read = variables_read_by_settings()
    assert "MNISTFORGE_TRUST_FILES" in read and "HF_TOKEN" in read
    assert read == set(settings.VARIABLES), "settings.VARIABLES differs from what settings reads"
    assert documented_variables() == read, (
        f"docs/usage.md lists {sorted(documented_variables() - read)} that settings does not "
        f"read, and misses {sorted(read - documented_variables())}")


def test_every_variable_has_a_settings_field():
    names = {n for n, v in vars(settings.Settings).items() if isinstance(v, property)}
    assert set(settings.VARIABLES.values()) <= names


# --- behaviour: the same variables, the same meanings -------------------------------------------

@pytest.fixture
def clean_env(monkeypatch):
    for name in settings.VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_environment_semantics_are_unchanged(clean_env, tmp_path):
    clean_env.setenv("MNISTFORGE_HOME", str(tmp_path / "home"))
    clean_env.setenv("MNISTFORGE_OFFLINE", "yes")
    clean_env.setenv("MNISTFORGE_WORKERS", "3")
    clean_env.setenv("MNISTFORGE_PROGRESS", "0")
    clean_env.setenv("MNISTFORGE_KEEP_RAW", "0")
    clean_env.setenv("MNISTFORGE_TRUST_FILES", "1")
    clean_env.setenv("MNISTFORGE_MIRRORS", "https://m.example/{file}")
    assert settings.cache_home() == tmp_path / "home"
    now = settings.current()
    assert now.offline and now.workers == 3 and not now.progress
    assert not now.keep_raw and now.trust_files
    assert mirrors().before == ("https://m.example/{file}",)
    # an argument wins over the variable
    assert settings.cache_home(tmp_path / "arg") == tmp_path / "arg"
    given = settings.current(offline=False, workers=5, progress=True, keep_raw=True, trust_files=False)
    assert not given.offline and given.workers == 5 and given.progress
    assert given.keep_raw and not given.trust_files
    s = settings.current()
    assert (s.cache, s.cache_source, s.offline, s.workers, s.progress, s.keep_raw,
            s.trust_files) == (tmp_path / "home", "MNISTFORGE_HOME", True, 3, False, False, True)
    # read at call time
    clean_env.setenv("MNISTFORGE_OFFLINE", "0")
    clean_env.setenv("MNISTFORGE_WORKERS", "0")
    assert not settings.current().offline and settings.current().workers == 1


def test_defaults_without_any_variable(clean_env, tmp_path):
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    s = settings.current()
    assert s.cache == tmp_path / "xdg" / "mnistforge" and s.cache_source == "the platform default"
    assert not s.offline and s.workers == settings.usable_cores() and s.progress is None
    assert s.keep_raw and not s.trust_files and s.mirrors == ("", "MNISTFORGE_MIRRORS")
    assert not s.hf_offline and s.hf_token is None and s.hf_endpoint is None
    assert s.hf_home is s.hf_datasets_cache is s.keras_home is None


def test_a_bad_variable_is_an_error_only_where_it_is_used(clean_env):
    clean_env.setenv("MNISTFORGE_WORKERS", "many")
    assert not settings.current().offline  # unrelated settings still read
    with pytest.raises(ConfigError, match="MNISTFORGE_WORKERS"):
        settings.current().workers
    assert settings.current(workers=2).workers == 2  # an argument never reads the variable
    with pytest.raises(ConfigError, match="MNISTFORGE_WORKERS"):  # every setting, resolved
        [getattr(settings.current(), name) for name in settings.VARIABLES.values()]


def test_hugging_face_variables_and_the_token_never_shown(clean_env, tmp_path):
    token = "hf_secret_do_not_print"
    clean_env.setenv("HF_TOKEN", token)
    clean_env.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    clean_env.setenv("HF_HUB_OFFLINE", "TRUE")
    clean_env.setenv("HF_HOME", str(tmp_path / "hf"))
    assert settings.current().hf_token == token and settings.current(hf_token="hf_arg").hf_token == "hf_arg"
    assert settings.current().hf_endpoint == "http://127.0.0.1:9" and settings.current().hf_offline
    assert settings.current().hf_home == tmp_path / "hf"
    s = settings.current()
    assert s.hf_token == token and token not in repr(s) and token not in str(s)
    with settings.using(hf_token="hf_other") as given:
        assert settings.current().hf_token == "hf_other" and "hf_other" not in repr(given)
    clean_env.setenv("HF_HUB_OFFLINE", "0")
    assert not settings.current().hf_offline


# --- behaviour: using() -----------------------------------------------------------------------

def test_using_wins_over_the_environment_nests_and_restores(clean_env, tmp_path):
    clean_env.setenv("MNISTFORGE_HOME", str(tmp_path / "env"))
    before = dict(os.environ)
    with settings.using(cache=tmp_path / "a", offline=True):
        assert settings.cache_home() == tmp_path / "a" and settings.current().offline
        assert settings.current().cache_source == "cache= / --cache"
        with settings.using(cache=tmp_path / "b", progress=False):
            assert settings.cache_home() == tmp_path / "b"
            assert settings.current().offline and not settings.current().progress  # the outer block's
            assert settings.cache_home(tmp_path / "arg") == tmp_path / "arg"  # argument wins
            assert not settings.current(offline=False).offline
        assert settings.cache_home() == tmp_path / "a" and settings.current(progress=True).progress is True
        assert dict(os.environ) == before
    assert settings.cache_home() == tmp_path / "env" and not settings.current().offline
    with pytest.raises(RuntimeError), settings.using(offline=True):
        raise RuntimeError("inside")
    assert not settings.current().offline and dict(os.environ) == before


def test_using_in_threads_each_sees_its_own(clean_env, tmp_path):
    barrier = threading.Barrier(2)
    seen: dict[str, list] = {}

    def work(name):
        with settings.using(cache=tmp_path / name, offline=name == "a"):
            barrier.wait(timeout=30)  # both blocks active at once
            seen[name] = [settings.cache_home(), settings.current().offline]
            barrier.wait(timeout=30)

    threads = [threading.Thread(target=work, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert seen == {"a": [tmp_path / "a", True], "b": [tmp_path / "b", False]}
    assert not settings.current().offline


def test_a_thread_started_inside_using_gets_it_with_its_context(clean_env, tmp_path):
    out = []
    with settings.using(cache=tmp_path / "c"):
        ctx = contextvars.copy_context()
        t = threading.Thread(target=ctx.run, args=(lambda: out.append(settings.cache_home()),))
        t.start()
        t.join(timeout=60)
    assert out == [tmp_path / "c"]


def test_a_spawned_worker_process_sees_the_parents_settings(clean_env, tmp_path):
    import multiprocessing as mp

    with settings.using(cache=tmp_path / "w", offline=True), \
            process_pool(1, mp_context=mp.get_context("spawn")) as ex:
        assert ex.submit(settings.cache_home).result(timeout=120) == tmp_path / "w"
        assert ex.submit(settings.current).result(timeout=120).offline is True


# --- behaviour: the command line ----------------------------------------------------------------

def test_cli_flags_hold_in_process_and_leave_the_environment_alone(clean_env, tmp_path,
                                                                    monkeypatch):
    from mnistforge.commands import info

    clean_env.setenv("MNISTFORGE_HOME", str(tmp_path / "env"))
    before = dict(os.environ)
    seen = []

    def probe(args):
        seen.append((settings.cache_home(), settings.current().offline, settings.current().bars,
                     dict(os.environ) == before))
        return 0

    monkeypatch.setattr(info, "run", probe)
    assert cli.main(["info", "mnist", "--cache", str(tmp_path / "flag")]) == 0
    assert seen[-1][0] == tmp_path / "flag" and seen[-1][3]
    assert settings.cache_home() == tmp_path / "env" and dict(os.environ) == before

    from mnistforge.commands import show
    monkeypatch.setattr(show, "run", probe)
    assert cli.main(["show", "mnist", "--out", str(tmp_path / "grid.png"), "--offline",
                     "--no-progress", "--cache", str(tmp_path / "flag2")]) == 0
    assert seen[-1] == (tmp_path / "flag2", True, False, True)
    assert not settings.current().offline and dict(os.environ) == before


def test_cli_offline_and_cache_reach_the_fetch(clean_env, tmp_path, capsys):
    clean_env.setenv("MNISTFORGE_HOME", str(tmp_path / "env"))
    before = dict(os.environ)
    code = cli.main(["fetch", "mnist", "--offline", "--cache", str(tmp_path / "flag")])
    err = capsys.readouterr().err
    assert code == 3, err  # unavailable offline: nothing was downloaded
    assert str(tmp_path / "flag" / "mnist" / "train-images-idx3-ubyte.gz") in err
    assert str(tmp_path / "env") not in err and not (tmp_path / "env").exists()
    assert dict(os.environ) == before


def test_cli_cache_that_is_a_file_names_the_flag(clean_env, tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("not a folder")
    assert cli.main(["fetch", "mnist", "--offline", "--cache", str(f)]) == 2
    assert "cache= / --cache" in capsys.readouterr().err


def test_offline_from_using_is_blamed_on_the_flag_not_the_variable(clean_env, tmp_path):
    from mnistforge import load
    from mnistforge.errors import OfflineError

    with settings.using(offline=True, cache=tmp_path), pytest.raises(OfflineError) as e:
        load("mnist", "test")
    assert "(--offline)" in str(e.value) and "drop --offline" in str(e.value)
    assert "MNISTFORGE_OFFLINE" not in str(e.value)
    clean_env.setenv("MNISTFORGE_OFFLINE", "1")
    with settings.using(cache=tmp_path), pytest.raises(OfflineError, match="MNISTFORGE_OFFLINE=1"):
        load("mnist", "test")


def test_the_cache_folder_follows_every_change_of_what_names_it(tmp_path, monkeypatch):
    """A changed variable, HOME for a ``~`` folder or using(...) names the new folder."""
    for name in ("MNISTFORGE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "h1"))
    assert settings.cache_home() == tmp_path / "h1" / ".cache" / "mnistforge"
    assert settings.cache_home("~/c") == tmp_path / "h1" / "c"
    monkeypatch.setenv("HOME", str(tmp_path / "h2"))
    assert settings.cache_home() == tmp_path / "h2" / ".cache" / "mnistforge"
    assert settings.cache_home("~/c") == tmp_path / "h2" / "c"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert settings.cache_home() == tmp_path / "xdg" / "mnistforge"
    monkeypatch.setenv("MNISTFORGE_HOME", str(tmp_path / "m"))
    assert settings.cache_home() == tmp_path / "m"
    with settings.using(cache="~/given"):
        assert settings.cache_home() == tmp_path / "h2" / "given"
    assert settings.cache_home() == tmp_path / "m"
