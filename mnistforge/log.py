"""Module loggers that import :mod:`logging` only when a record could be shown.

``logger = get_logger(__name__)`` stands for ``logging.getLogger(__name__)`` in
the modules a one-shot ``mnistforge.load(...)`` imports: :mod:`logging` (and
the threading, traceback and string modules it pulls in) costs a one-shot
script more than the load itself.  Until something has imported
:mod:`logging`, nothing can have configured a handler or a level, so a debug
or info record would be dropped: it is skipped without importing anything.
Warnings and above always go through :mod:`logging` (its last-resort handler
prints them to stderr when nothing is configured).  Records name the caller's
line, as with a plain logger.

Examples
--------
>>> logger = get_logger("mnistforge.example")
>>> logger.name
'mnistforge.example'
>>> logger.info("dropped or logged, as by logging.getLogger(%r)", logger.name)
"""
from __future__ import annotations

import sys
from typing import Any

__all__ = ["get_logger", "LazyLogger"]


class LazyLogger:
    """``debug``/``info``/``warning``/``error``/``exception`` of ``logging.getLogger(name)``;
    any other attribute is the real logger's."""

    __slots__ = ("name", "_logger")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: Any = None

    def _real(self) -> Any:
        if self._logger is None:
            import logging

            self._logger = logging.getLogger(self.name)
        return self._logger

    def _log(self, method: str, msg: object, args: tuple[object, ...], kwargs: dict[str, Any], *,
             quiet_without_logging: bool) -> None:
        if quiet_without_logging and "logging" not in sys.modules:
            return  # nothing configured logging: the record would be dropped
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 2  # the caller's line, not ours
        getattr(self._real(), method)(msg, *args, **kwargs)

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._log("debug", msg, args, kwargs, quiet_without_logging=True)

    def info(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._log("info", msg, args, kwargs, quiet_without_logging=True)

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._log("warning", msg, args, kwargs, quiet_without_logging=False)

    def error(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._log("error", msg, args, kwargs, quiet_without_logging=False)

    def exception(self, msg: object, *args: object, **kwargs: Any) -> None:
        kwargs.setdefault("exc_info", True)
        self._log("error", msg, args, kwargs, quiet_without_logging=False)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real(), name)

    def __repr__(self) -> str:
        return f"<LazyLogger {self.name}>"


def get_logger(name: str) -> LazyLogger:
    """The module logger ``name`` (see the module doc)."""
    return LazyLogger(name)
