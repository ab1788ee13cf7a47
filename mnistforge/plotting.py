"""matplotlib, the optional ``[plot]`` extra, for the few pictures the evaluators draw."""
from __future__ import annotations

from .errors import require


def pyplot(purpose: str):
    """``matplotlib.pyplot`` on the non-interactive Agg backend, or MissingDependencyError.

    Examples
    --------
    >>> plt = pyplot("a picture")   # doctest: +SKIP
    """
    matplotlib = require("matplotlib", "plot", purpose)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
