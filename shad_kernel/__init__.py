"""The ``shad`` Jupyter kernel: IPython, where a cell is a goal for Shad by default and Python still works.

Goal cells run as ``%%shad run`` (from ``shad_magics``, loaded at start) with the session defaults
(``%shad config vault=... provider=...`` or ``$SHAD_VAULT``); every other cell is plain IPython. The
kernel's language is Python, so papermill, nbval and nbclient work unchanged.

**Which cells are goals** (first match wins):

1. Markers: a first line ``#py`` or ``# python`` forces Python; a leading ``>>`` forces a goal (the rest
   of the cell; ``>>>`` stays a pasted Python prompt); ``%%shad run [options]`` is a goal with options.
2. Magics (``%``), shell escapes (``!``), help (``?``) and empty cells are Python.
3. Two plain words side by side outside strings and comments (``Summarize roasting``) make a goal:
   Python syntax never allows that.
4. A last line ending in ``?`` makes a goal (a question), unless it is IPython's help syntax ``obj?`` for
   a defined name.
5. A cell that compiles (after IPython's transformations) is Python, except an expression made only of
   undefined names (``roasting``, ``cold-brew``, ``roasting and grinding``): as Python it could only raise
   ``NameError``, so it is a goal. Builtins and magics count as defined (``help``, ``pwd`` stay Python);
   a magic with arguments needs its ``%`` (``cd notes`` reads as prose, ``%cd notes`` is the magic).
6. Anything else is Python, so code with a typo shows its ``SyntaxError`` instead of starting a run.

Silent execute requests (sent by tools, not typed by a person) always run as Python. History keeps what
ran: a goal cell is stored as ``%%shad run`` + the goal, so ``%rerun`` runs it again.

``python -m shad_kernel`` starts the kernel (Jupyter passes ``-f CONNECTION_FILE``);
``python -m shad_kernel install [--user | --sys-prefix | --prefix PREFIX] [--name NAME]`` writes the
kernelspec for split environments (``pip install`` already ships it in ``share/jupyter/kernels/shad``).
"""

from __future__ import annotations

from ._cells import Cell, CellKind, classify_cell, goal_magic
from ._install import KERNEL_NAME, KernelInstallError, install, kernel_spec
from ._kernel import RULE, ShadKernel

__all__ = [
    "KERNEL_NAME",
    "RULE",
    "Cell",
    "CellKind",
    "KernelInstallError",
    "ShadKernel",
    "classify_cell",
    "goal_magic",
    "install",
    "kernel_spec",
]
