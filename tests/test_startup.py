"""Start-up: a progress bar pulls in no asyncio (tqdm's optional async support).

The start-up bounds of issues 21 and 33 (lazy imports so that `import mnistforge` and a one-shot
load import only what they use) are withdrawn (issues 40 and 44): imports sit at the top of each
module, and a whole one-shot load is measured against other readers in `benchmarks/`.
"""
from __future__ import annotations

import subprocess
import sys


def modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_a_progress_bar_does_not_pull_in_asyncio():
    mods = modules_after("from mnistforge.progress import progress\n"
                         "list(progress(range(3), disable=True))")
    assert "tqdm" in mods and "asyncio" not in mods
