"""Checks behind ``mnistforge verify``: prove a dataset is what it claims.

Each check is a small function returning a :class:`CheckResult` (name, status ``pass``/``warn``/``fail``,
measured values, message); :func:`verify` runs the applicable ones on a dataset name, a folder or a loaded
split and returns a :class:`VerifyReport` (``.results``, ``.status``, ``.to_json()``).

>>> from mnistforge.checks import verify
>>> report = verify("mnist:test")                 # doctest: +SKIP
>>> report.status, report.exit_code               # doctest: +SKIP
('pass', 0)
"""
from .result import FAIL, PASS, WARN, CheckResult, VerifyReport, run_check, worst
from .suite import verify

__all__ = ["verify", "CheckResult", "VerifyReport", "run_check", "worst", "PASS", "WARN", "FAIL"]
