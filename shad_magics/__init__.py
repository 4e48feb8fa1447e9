"""``%%shad`` / ``%shad`` IPython magics: run goals over Obsidian vaults from a notebook.

    %load_ext shad_magics
    %shad config vault=example_notebooks/vault

    %%shad run -o result --max-tokens 20000
    How long should I rest beans after roasting, and why?

The run executes on one engine thread while the cell waits (a kernel interrupt cancels it cleanly),
a live DAG explorer shows its progress, and the result is a ``ShadResult`` (the cited report, metrics
as a DataFrame, the DAG as a networkx graph). A failed run raises ``ShadRunError``; a bad line raises
``ShadUsageError``. ``await shad_magics.arun(goal)`` does the same from async code.
"""

from __future__ import annotations

from typing import Any

from ._errors import ShadPartialWarning, ShadRunError, ShadUsageError
from ._launch import arun
from ._magics import ShadMagics
from ._result import ShadResult
from ._runner import RunHandle

__all__ = [
    "RunHandle",
    "ShadMagics",
    "ShadPartialWarning",
    "ShadResult",
    "ShadRunError",
    "ShadUsageError",
    "arun",
    "load_ipython_extension",
    "unload_ipython_extension",
]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext shad_magics``: register the magics; traitlets config (``c.ShadMagics.*``) applies."""
    from . import _launch

    magics = ShadMagics(shell=ipython)  # type: ignore[no-untyped-call, unused-ignore]
    ipython.register_magics(magics)
    _launch.session = magics


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext shad_magics``: remove ``%shad`` / ``%%shad`` again."""
    from . import _launch

    manager = ipython.magics_manager
    for kind in ("line", "cell"):
        manager.magics[kind].pop("shad", None)
    manager.registry.pop(ShadMagics.__name__, None)
    _launch.session = None
