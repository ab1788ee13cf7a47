"""Exit codes by one table (issue 27): every command of ``mnistforge --help`` is run against each
class of error that applies to it (usage error, data that failed a check, a resource that is
unavailable, an interruption) and must exit with the code the table in ``mnistforge --help``
gives that class.  Real files and folders, an offline empty cache, a real SIGINT; a missing
optional extra is a module that cannot be imported (``sys.modules[name] = None``)."""
from __future__ import annotations

import gzip
import os
import re
import shutil
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

from mnistforge.cli import COMMAND_MODULES, build_parser, load_commands, main
from mnistforge.errors import EXIT_CODES
from mnistforge.io.idx import write_idx
from mnistforge.io.manifest import Manifest

PKG = Path(__file__).resolve().parents[1] / "mnistforge"


def documented_codes(capsys) -> dict:
    """{error class: code} read from the epilog of ``mnistforge --help`` (not from errors.py)."""
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    rows = dict(re.findall(r"^\s+(\d+)\s+(.+)$", text.split("exit codes:", 1)[1], re.M))
    words = {"ok": "success", "usage": "usage error", "failed": "failed a check",
             "unavailable": "resource is unavailable", "interrupted": "interrupted"}
    codes = {cls: [int(c) for c, meaning in rows.items() if w in meaning] for cls, w in words.items()}
    assert all(len(c) == 1 for c in codes.values()), codes   # each class has exactly one row
    return {cls: c[0] for cls, c in codes.items()}


def command_names() -> list[str]:
    return [m.NAME for m in load_commands()]


# --------------------------------------------------------------------------- fixtures

def _digits_folder(d: Path, seed: int = 3) -> Path:
    rng = np.random.default_rng(seed)
    for part, n in (("train", 40), ("test", 30)):
        write_idx(d / f"emnist-digits-{part}-images-idx3-ubyte.gz",
                  rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))
        write_idx(d / f"emnist-digits-{part}-labels-idx1-ubyte.gz", (np.arange(n) % 10).astype(np.uint8))
    Manifest(kind="emnist").write(d)
    return d


@pytest.fixture
def places(tmp_path, cache):
    """Paths the argv templates name: a loadable folder, a damaged one (truncated images), an
    existing output folder, an empty folder, a path that is not there, a fresh output path."""
    good = _digits_folder(tmp_path / "good")
    bad = shutil.copytree(good, tmp_path / "bad")
    for part in ("train", "test"):
        p = bad / f"emnist-digits-{part}-images-idx3-ubyte.gz"
        raw = gzip.open(p).read()
        with gzip.open(p, "wb") as f:
            f.write(raw[: len(raw) // 2])
    (tmp_path / "exists").mkdir()
    (tmp_path / "exists" / "mine.txt").write_text("not mnistforge's")
    (tmp_path / "empty").mkdir()
    return {"good": good, "bad": bad, "exists": tmp_path / "exists", "empty": tmp_path / "empty",
            "missing": tmp_path / "not-there", "out": tmp_path / "new-out", "tmp": tmp_path,
            "cache": cache}


def fill(argv, places) -> list[str]:
    return [a.format(**{k: str(v) for k, v in places.items()}) for a in argv]


# --------------------------------------------------------------------------- the table's rows

def test_help_lists_every_class_and_every_command(capsys):
    codes = documented_codes(capsys)
    assert codes == {"ok": 0, "failed": 1, "usage": 2, "unavailable": 3, "interrupted": 130}
    assert set(codes.values()) == set(EXIT_CODES)   # the table is the one errors.py keeps
    assert main(["--help"]) == 0
    listed = capsys.readouterr().out
    assert len(command_names()) == len(COMMAND_MODULES)
    for name in command_names():          # the commands this matrix covers are those of --help
        assert re.search(rf"^\s+{re.escape(name)}\s", listed, re.M), name


@pytest.mark.parametrize("name", command_names())
def test_an_unknown_option_is_a_usage_error_for_every_command(name, places, capsys):
    code = documented_codes(capsys)["usage"]
    assert main([name, "--no-such-option"]) == code
    err = capsys.readouterr().err
    assert "usage: mnistforge" in err and "--no-such-option" in err or "required" in err, err


#: a value error of each command (bad values, unknown names, no such path, existing --out)
USAGE = {
    "info": [["info", "mnits"], ["info", "{missing}/x"]],
    "fetch": [["fetch", "nope"], ["fetch", "mnist", "--from", "{missing}"],
              ["fetch", "mnist", "--mirror", "http://127.0.0.1:9/{{nmae}}/{{file}}"]],
    "find-copies": [["find-copies", "{missing}"]],
    "show": [["show", "mnist", "nosuch", "--out", "{out}.png"], ["show", "{missing}/", "--out", "{out}.png"]],
    "synth-sd19": [["synth-sd19", "{out}", "--fields", "q"], ["synth-sd19", "{exists}", "--scale", "0.0005"]],
    "sd19": [["sd19", "info", "{missing}"]],
    "build": [["build", "mnist", "--sd19", "{missing}", "--out", "{out}"],
              ["build", "mnist", "--sd19", "{empty}", "--out", "{exists}"],
              ["build", "nosuch", "--sd19", "{empty}", "--out", "{out}"]],
    "verify": [["verify", "mnits"], ["verify", "{missing}"]],
    "export": [["export", "hf", "--out", "{out}"], ["export", "hf", "{good}", "--out", "{exists}"]],
    "evaluate": [["evaluate", "nosuch", "--train", "{good}:train", "--test", "{good}:test"],
                 ["evaluate", "linear", "--train", "{good}:train"]],
    "significance": [["significance"], ["significance", "{missing}.tsv"]],
    "tarp": [["tarp", "{good}", "--task", "0v1", "--k", "6..0"], ["tarp", "{missing}/", "--task", "0v1"]],
    "manitest": [["manitest", "{good}", "--classifier", "linear", "--slice", "10:5"],
                 ["manitest", "{good}", "--classifier", "nosuch"]],
    "demo": [["demo", "--out", "{exists}", "--scale", "0.002"]],
    "card": [["card", "{missing}.npy", "--test", "{good}:test", "--out", "{out}"],
             ["card", "{good}/emnist-digits-test-labels-idx1-ubyte.gz", "--test", "{good}:test", "--out", "{exists}"]],
    "overlap": [["overlap", "{good}:train", "{good}:test", "--level", "pixel"],
                ["overlap", "{good}:train", "{good}:test"]],     # no identities in these files
    "partition": [["partition", "{good}:train", "--by", "iid", "--partitions", "0", "--out", "{out}"],
                  ["partition", "{good}:train", "--by", "iid", "--out", "{exists}"]],
}

#: a resource that cannot be had: an offline empty cache, an SD19 folder without SD19
UNAVAILABLE = {
    "fetch": [["fetch", "mnist"]],
    "show": [["show", "mnist", "--out", "{out}.png"]],
    "sd19": [["sd19", "info", "{empty}"]],
    "build": [["build", "mnist", "--sd19", "{empty}", "--out", "{out}"]],
    "verify": [["verify", "mnist"]],
    "export": [["export", "hf", "mnist", "--out", "{out}"]],
    "evaluate": [["evaluate", "linear", "--train", "mnist:train", "--test", "mnist:test"]],
    "tarp": [["tarp", "mnist", "--task", "0v1"]],
    "manitest": [["manitest", "mnist", "--classifier", "linear"]],
    "card": [["card", "{good}/emnist-digits-test-labels-idx1-ubyte.gz", "--test", "mnist:test", "--out", "{out}"]],
    "overlap": [["overlap", "mnist:train", "mnist:test"]],          # the QMNIST tables, not cached
    "partition": [["partition", "mnist:test", "--by", "iid", "--out", "{out}"]],   # (or the [fl] extra)
}

#: data that failed a check: truncated idx files, a damaged cached file
FAILED = {
    "show": [["show", "{bad}", "--out", "{out}.png"]],
    "verify": [["verify", "{bad}", "--no-near"]],
    "export": [["export", "hf", "{bad}", "--out", "{out}"]],
    "evaluate": [["evaluate", "linear", "--train", "{bad}:train", "--test", "{bad}:test"]],
    "tarp": [["tarp", "{bad}", "--task", "0v1", "--runs", "1"]],
    "manitest": [["manitest", "{bad}", "--classifier", "linear", "--samples", "2"]],
    "fetch": [["fetch", "mnist/t10k-labels-idx1-ubyte.gz"]],        # damaged in the cache below
    "significance": [["significance", "{tmp}/broken.tsv", "{tmp}/broken.tsv"]],
    "card": [["card", "{good}/emnist-digits-test-labels-idx1-ubyte.gz", "--test", "{bad}:test", "--out", "{out}"],
             ["card", "{tmp}/broken.tsv", "--test", "{good}:test", "--out", "{out}"]],
    "overlap": [["overlap", "{bad}:train", "{good}:test"]],
}

#: what does not apply, and why (each command is in every table or here)
NOT_APPLICABLE = {
    "unavailable": {"info": "reads only the registry and the cache's status",
                    "synth-sd19": "needs nothing but the package",
                    "demo": "needs nothing but the package (a synthetic SD19)",
                    "significance": "reads only its files (a missing extra: below)",
                    "find-copies": "reads only what it finds, never downloads"},
    "failed": {"info": "reports a folder's status, checks nothing",
               "synth-sd19": "writes data, reads none", "demo": "its own data (covered by test_demo)",
               "sd19": "sd19 info --strict (test_sd19_cli), build from a damaged SD19 (below)",
               "build": "a damaged SD19: test_a_damaged_sd19_fails_the_build below",
               "find-copies": "a survey: a damaged copy is reported as such, exit 0",
               "partition": "needs the [fl] extra before it reads (exit 3 without it); then load's own checks"},
}


def test_every_command_is_in_every_table():
    for cls, table in (("usage", USAGE), ("unavailable", UNAVAILABLE), ("failed", FAILED)):
        missing = set(command_names()) - set(table) - set(NOT_APPLICABLE.get(cls, {}))
        assert not missing, f"{cls}: no case for {sorted(missing)}"


def _cases(table):
    return [pytest.param(argv, id=" ".join(argv)) for cases in table.values() for argv in cases]


def _run(argv, places, capsys):
    rc = main(fill(argv, places))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    assert "error" in captured.err or "FAIL" in captured.out + captured.err, captured
    return rc


@pytest.mark.parametrize("argv", _cases(USAGE))
def test_usage_errors(argv, places, capsys):
    code = documented_codes(capsys)["usage"]
    assert _run(argv, places, capsys) == code
    assert not places["out"].exists()
    assert sorted(p.name for p in places["exists"].iterdir()) == ["mine.txt"]   # untouched


@pytest.mark.parametrize("argv", _cases(UNAVAILABLE))
def test_unavailable_resources(argv, places, capsys):
    code = documented_codes(capsys)["unavailable"]
    assert _run(argv, places, capsys) == code
    assert not places["out"].exists() and not Path(f"{places['out']}.png").exists()


@pytest.mark.parametrize("argv", _cases(FAILED))
def test_failed_checks(argv, places, capsys):
    from mnistforge.evaluators.errorlists import write_predictions

    code = documented_codes(capsys)["failed"]
    (places["cache"] / "mnist").mkdir(parents=True)
    with gzip.open(places["cache"] / "mnist" / "t10k-labels-idx1-ubyte.gz", "wb") as f:
        f.write(b"not the labels")                   # another file under the official name
    broken = places["tmp"] / "broken.tsv"
    write_predictions(broken, [1, 2, 3], [1, 0, 3], name="a")
    broken.write_text(broken.read_text().replace("\n2\t", "\n2\tx"))   # a damaged row
    assert _run(argv, places, capsys) == code
    assert not places["out"].exists()


def test_a_damaged_sd19_fails_the_build(tmp_path, capsys):
    from mnistforge.sd19.synth import SynthConfig, synthesize_sd19

    src = synthesize_sd19(tmp_path / "sd19", SynthConfig(scale=0.002, edition=1, packaging="dir",
                                                          fields="d", hierarchies=("by_write",),
                                                          workers=1), progress=False)
    mis = sorted((src / "by_write").rglob("d*.mis"))[0]
    b = bytearray(mis.read_bytes())
    b[len(b) // 2] ^= 0xFF
    mis.write_bytes(bytes(b))
    code = documented_codes(capsys)["failed"]
    assert main(["build", "qmnist", "--sd19", str(src), "--out", str(tmp_path / "o"), "--workers", "1"]) == code
    assert mis.name in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_verify_with_a_reference_offline_is_unavailable_not_failed(tmp_path, cache, mnist_reference, capsys):
    # issue 27: exited 1 ("the data failed a check") though only the reference could not be had
    d = tmp_path / "m"
    d.mkdir()
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(mnist_reference / f, d / f)
    code = documented_codes(capsys)["unavailable"]
    assert main(["verify", str(d), "--reference", "qmnist", "--no-near", "--offline"]) == code
    out = capsys.readouterr().out
    assert "cannot load the reference qmnist:test" in out and "1 failed" in out


def test_a_missing_path_is_said_as_such_by_load(tmp_path):
    import mnistforge
    from mnistforge.errors import DatasetNotFoundError, NoSuchPathError

    with pytest.raises(NoSuchPathError, match="no such file or folder") as e:
        mnistforge.load(str(tmp_path / "emnist-letters.mat"))
    assert "did you mean" not in str(e.value) and str(tmp_path) in str(e.value)
    assert isinstance(e.value, DatasetNotFoundError) and isinstance(e.value, FileNotFoundError)
    with pytest.raises(DatasetNotFoundError, match="did you mean 'emnist-letters'"):
        mnistforge.load("emnist-leters")     # a typo of a name is still answered as one


# --------------------------------------------------------------------------- missing extras

EXTRAS = [
    pytest.param("matplotlib", ["tarp", "{good}", "--task", "0v1", "--runs", "1", "--plot", "{out}.png"],
                 id="tarp --plot"),
    pytest.param("matplotlib", ["significance", "--example", "keysers2006", "--bootstrap", "10",
                                "--plot", "{out}.png"], id="significance --plot"),
    pytest.param("matplotlib", ["manitest", "{good}", "--classifier", "linear", "--samples", "2",
                                "--plot", "{out}"], id="manitest --plot"),
    pytest.param("torch", ["manitest", "{good}", "--classifier", "lenet", "--samples", "2"],
                 id="manitest lenet"),
    pytest.param("torch", ["evaluate", "lenet", "--train", "{good}:train", "--test", "{good}:test"],
                 id="evaluate lenet"),
    pytest.param("datasets", ["export", "hf", "{good}", "--out", "{out}"], id="export hf"),
]


@pytest.mark.parametrize("module, argv", EXTRAS)
def test_a_missing_extra_is_unavailable_and_found_before_any_work(module, argv, places, capsys,
                                                                  monkeypatch):
    code = documented_codes(capsys)["unavailable"]
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)     # `import module` fails as if not installed
    assert main(fill(argv, places)) == code
    captured = capsys.readouterr()
    assert module in captured.err and "pip install 'mnistforge[" in captured.err, captured.err
    assert captured.out == ""          # nothing computed or printed before the refusal
    assert not places["out"].exists() and not Path(f"{places['out']}.png").exists()


# --------------------------------------------------------------------------- Ctrl-C

#: a run of each command that reaches its work (most would then succeed or fail otherwise)
WORK = {
    "info": ["info"],
    "fetch": ["fetch", "mnist"],
    "show": ["show", "{good}", "--out", "{out}.png"],
    "synth-sd19": ["synth-sd19", "{out}", "--scale", "0.0005"],
    "sd19": ["sd19", "info", "{empty}"],
    "build": ["build", "mnist", "--sd19", "{empty}", "--out", "{out}"],
    "verify": ["verify", "{good}", "--no-near"],
    "export": ["export", "hf", "{good}", "--out", "{out}"],
    "evaluate": ["evaluate", "linear", "--train", "{good}:train", "--test", "{good}:test"],
    "significance": ["significance", "--example", "keysers2006", "--bootstrap", "10"],
    "tarp": ["tarp", "{good}", "--task", "0v1", "--runs", "1"],
    "manitest": ["manitest", "{good}", "--classifier", "linear", "--samples", "2"],
    "demo": ["demo", "--out", "{out}", "--scale", "0.002"],
    "card": ["card", "{good}/emnist-digits-test-labels-idx1-ubyte.gz", "--test", "{good}:test", "--out", "{out}"],
    "find-copies": ["find-copies", "--only", "{good}"],
    "overlap": ["overlap", "{good}:train", "{good}:test"],
    "partition": ["partition", "{good}:train", "--by", "iid", "--out", "{out}"],
}


def _ctrl_c_at_the_first_library_call():
    """A real SIGINT, raised when the command first calls into the library (a module of
    mnistforge outside cli.py and commands/): Python's own handler turns it into
    KeyboardInterrupt inside that call, as a Ctrl-C at that moment would."""
    skip = (str(PKG / "cli.py"), str(PKG / "commands") + os.sep)

    def profile(frame, event, arg):
        f = frame.f_code.co_filename
        if event == "call" and f.startswith(str(PKG)) and not f.startswith(skip):
            sys.setprofile(None)
            signal.raise_signal(signal.SIGINT)
    sys.setprofile(profile)


def test_every_command_has_an_interrupted_case():
    assert set(WORK) == set(command_names())


@pytest.mark.skipif(os.name != "posix", reason="needs POSIX signals")
@pytest.mark.parametrize("name", sorted(WORK))
def test_ctrl_c_during_the_work_is_interrupted(name, places, capsys):
    code = documented_codes(capsys)["interrupted"]
    argv = fill(WORK[name], places)
    build_parser()                      # the commands are imported before the clock starts
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    try:
        _ctrl_c_at_the_first_library_call()
        rc = main(argv)
    finally:
        sys.setprofile(None)
    err = capsys.readouterr().err
    assert rc == code and "interrupted" in err and "Traceback" not in err, err
    left = sorted(p.name for p in places["tmp"].iterdir())
    assert not [n for n in left if n.startswith("new-out")], left   # nothing half-written kept
