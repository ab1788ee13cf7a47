"""Start-up stays light: `mnistforge --help` and `import mnistforge` load no NumPy, a load no asyncio."""
from __future__ import annotations

import subprocess
import sys


def modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_help_imports_no_numpy():
    mods = modules_after("import contextlib, io\nfrom mnistforge.cli import main\n"
                         "with contextlib.redirect_stdout(io.StringIO()):\n"
                         "    try:\n        main(['--help'])\n    except SystemExit:\n        pass")
    assert "mnistforge.commands.evaluate" in mods      # every command was registered
    # numpy may sit in sys.modules as a lazy placeholder; its core must never have run
    assert "numpy._core" not in mods


def test_import_is_light():
    assert "numpy._core" not in modules_after("import mnistforge")


def test_a_progress_bar_does_not_pull_in_asyncio():
    mods = modules_after("from mnistforge.progress import progress\n"
                         "list(progress(range(3), disable=True))")
    assert "tqdm" in mods and "asyncio" not in mods
