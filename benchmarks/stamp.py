"""The line every benchmark prints with its figures: the date (UTC) and the load average.

docs/ quote a figure with the command that printed it, this date and the 1-minute load
(``tests/test_docs_figures.py``; the convention is in ``benchmarks/README.md``).
"""
from __future__ import annotations

import datetime
import os


def stamp() -> str:
    """``measured 2026-12-04 05:20 UTC, load average 1.20 0.90 0.75 (2 cores)``."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"measured {now}, load average {load} ({os.cpu_count()} cores)"
