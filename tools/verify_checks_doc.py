"""Rewrite the table of checks in docs/verify.md from ``mnistforge.checks.rows.CHECKS``.

    .venv/bin/python tools/verify_checks_doc.py          # rewrite the section in place
    .venv/bin/python tools/verify_checks_doc.py --check  # exit 1 when the page is out of date

Only the lines between the two marker comments change (``checks/table.BEGIN`` and ``END``).
"""
from __future__ import annotations

import sys
from pathlib import Path

from mnistforge.checks.rows import CHECKS
from mnistforge.checks.table import doc_section, checks_markdown, replace_section

PAGE = Path(__file__).resolve().parents[1] / "docs" / "verify.md"


def main(argv: list[str]) -> int:
    text, rendered = PAGE.read_text(), checks_markdown(CHECKS)
    if doc_section(text) == rendered:
        print(f"{PAGE}: up to date")
        return 0
    if "--check" in argv:
        print(f"{PAGE}: the table of checks differs from CHECKS; run {Path(__file__).name}")
        return 1
    tmp = PAGE.with_name(PAGE.name + ".tmp")
    tmp.write_text(replace_section(text, rendered))
    tmp.replace(PAGE)   # written under a temporary name, then renamed
    print(f"{PAGE}: table of checks rewritten ({len(CHECKS)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
