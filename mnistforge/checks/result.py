"""Check results, the report that collects them, and the runner.

A check is a plain function returning a :class:`CheckResult`: a name, a status (``pass``, ``warn`` or
``fail``; ``info`` for facts worth knowing that are never a finding, such as the known label errors of MNIST's
test set), the values it measured and a one-line message.  :func:`run_check` calls one and turns an unexpected
exception into a ``fail`` result, so one broken file never hides the other findings.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import textwrap
import math
from collections.abc import Iterable
from typing import Any, Callable

import numpy as np

from ..errors import EXIT_UNAVAILABLE, exit_code

logger = logging.getLogger(__name__)

PASS, WARN, FAIL, INFO = "pass", "warn", "fail", "info"
STATUSES = (PASS, WARN, FAIL, INFO)
#: ``info`` ranks with ``pass``: it never makes a report warn or fail, strict or not
_RANK = {PASS: 0, INFO: 0, WARN: 1, FAIL: 2}


def worst(statuses: Iterable[str]) -> str:
    """Return the most severe of ``statuses`` (``pass`` for none).

    >>> worst(["pass", "warn", "pass"])
    'warn'
    """
    return max([PASS, *statuses], key=_RANK.__getitem__)   # the first of the most severe


def jsonable(value: Any) -> Any:
    """Convert NumPy scalars/arrays, tuples and paths into plain JSON values."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (np.floating, float)):
        f = float(value)
        return f if math.isfinite(f) else None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


@dataclasses.dataclass
class CheckResult:
    """What one check found: a short ``name`` (``"integrity.counts[test]"``), a ``status``
    (pass, warn, fail or info), the measured ``values`` (JSON-serialisable after
    :func:`jsonable`), a one-line ``message`` for the table, and ``artifacts`` kept for the HTML
    report (example images, index pairs; never written to JSON).

    >>> r = CheckResult("integrity.counts", "pass", {"n": 3}, "3 images, 3 labels")
    >>> r.to_dict()["status"]
    'pass'
    """

    name: str
    status: str
    values: dict[str, Any] = dataclasses.field(default_factory=dict)
    message: str = ""
    artifacts: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"check {self.name}: status must be one of {STATUSES}, "
                             f"found {self.status!r}")

    @property
    def ok(self) -> bool:
        return self.status != FAIL

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "message": self.message, "values": jsonable(self.values)}


def load_failure(name: str, error: Exception, message: str | None = None) -> CheckResult:
    """A ``fail`` result for data that could not be loaded; marked ``unavailable`` when the
    cause is a resource that could not be had (offline, not cached: exit code 3), so that a
    report whose only failures are such exits 3, not 1 (the data never failed a check).

    >>> from mnistforge.errors import OfflineError, HashMismatchError
    >>> load_failure("load[test]", OfflineError("x")).values["unavailable"]
    True
    >>> load_failure("load[test]", HashMismatchError("y")).values["unavailable"]
    False
    """
    return CheckResult(name, FAIL, {"error": type(error).__name__,
                                    "unavailable": exit_code(error) == EXIT_UNAVAILABLE},
                       message if message is not None else str(error))


def run_check(name: str, func: Callable[..., CheckResult], *args: Any, **kwargs: Any) -> CheckResult:
    """Call one check; an exception becomes a ``fail`` result named ``name``."""
    try:
        result = func(*args, **kwargs)
    except Exception as e:  # a crashing check is a finding, not a crash of verify
        logger.debug("check %s raised", name, exc_info=True)
        return CheckResult(name, FAIL, {"error": type(e).__name__}, f"{type(e).__name__}: {e}")
    if result.name != name and name:
        result.name = name
    return result


@dataclasses.dataclass
class VerifyReport:
    """All results of one ``verify`` run.

    ``status`` is the worst status; with ``strict`` a warning counts as a failure.  ``exit_code`` is what the
    command returns: 0, 1 (the data failed a check) or 3 when the only failures are resources that could not
    be had (a reference offline: checks marked ``unavailable``), as in :data:`mnistforge.errors.EXIT_CODES`.

    >>> rep = VerifyReport("demo", [CheckResult("a", "pass"), CheckResult("b", "warn")])
    >>> rep.status, rep.exit_code
    ('warn', 0)
    >>> VerifyReport("demo", rep.results, strict=True).exit_code
    1
    >>> VerifyReport("demo", [CheckResult("r", "fail", {"unavailable": True})]).exit_code
    3
    """

    target: str
    results: list[CheckResult] = dataclasses.field(default_factory=list)
    strict: bool = False
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def status(self) -> str:
        return worst(r.status for r in self.results)

    @property
    def ok(self) -> bool:
        s = self.status
        return s == PASS or (s == WARN and not self.strict)

    @property
    def exit_code(self) -> int:
        if self.ok:
            return 0
        failed = [r for r in self.results if r.status == FAIL or (self.strict and r.status == WARN)]
        return 3 if all(r.values.get("unavailable") for r in failed) else 1

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.results) for s in STATUSES}

    def __getitem__(self, name: str) -> CheckResult:
        for r in self.results:
            if r.name == name:
                return r
        raise KeyError(f"no check named {name!r}; have: {', '.join(r.name for r in self.results)}")

    def find(self, prefix: str) -> list[CheckResult]:
        """Results whose name starts with ``prefix``."""
        return [r for r in self.results if r.name.startswith(prefix)]

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "status": self.status, "strict": self.strict, "ok": self.ok,
                "counts": self.counts(), "info": jsonable(self.info), "results": [r.to_dict() for r in self.results]}

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    def table(self, width: int = 100) -> str:
        """Plain-text table: status, check name, message (wrapped to ``width`` columns)."""
        rows = [(r.status.upper(), r.name, r.message) for r in self.results]
        w0 = 4
        w1 = max([len("check")] + [len(r[1]) for r in rows])
        lines = [f"{'':{w0}}  {'check':{w1}}  result", f"{'-' * w0}  {'-' * w1}  {'-' * 6}"]
        room = max(30, width - w0 - w1 - 4)
        pad = " " * (w0 + w1 + 4)
        for st, name, msg in rows:
            # wrapped to the width, never cut: the reason is the point of the line
            parts = textwrap.wrap(msg, room, break_long_words=False, break_on_hyphens=False) or [""]
            lines.append(f"{st:{w0}}  {name:{w1}}  {parts[0]}")
            lines += [pad + p for p in parts[1:]]
        c = self.counts()
        verdict = "OK" if self.ok else "FAILED"
        lines.append(f"{verdict}: {c[PASS]} passed, {c[WARN]} warnings, {c[FAIL]} failed"
                     + (f", {c[INFO]} for information" if c[INFO] else "")
                     + (" (strict: warnings fail)" if self.strict and c[WARN] else ""))
        return "\n".join(lines)


def fail(name: str, values: dict[str, Any] | None = None, message: str = "") -> CheckResult:
    return CheckResult(name, FAIL, values or {}, message)


def result(name: str, ok: bool, values: dict[str, Any] | None = None, message: str = "", *,
           bad: str = FAIL) -> CheckResult:
    """``pass`` when ``ok`` else ``bad`` (``fail`` by default)."""
    return CheckResult(name, PASS if ok else bad, values or {}, message)

