"""Module loggers: ``logger = get_logger(__name__)`` is ``logging.getLogger(__name__)``.

Only the CLI prints; library code logs through its module's logger (warnings reach stderr
through :mod:`logging`'s last-resort handler when nothing is configured).

>>> logger = get_logger("mnistforge.example")
>>> logger.name
'mnistforge.example'
"""
from __future__ import annotations

import logging

__all__ = ["get_logger"]


def get_logger(name: str) -> logging.Logger:
    """The logger of module ``name``."""
    return logging.getLogger(name)
