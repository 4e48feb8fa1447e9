"""``ShadKernel``: IPython's kernel, with ``shad_magics`` loaded and goal cells run as ``%%shad run``."""

from __future__ import annotations

import builtins
from typing import Any

from ipykernel.ipkernel import IPythonKernel

from engine import __version__

from ._cells import CellKind, classify_cell, goal_magic

__all__ = ["RULE", "ShadKernel"]

RULE = """\
In this kernel a cell is a goal for Shad unless it is Python (first match wins):
  1. A first line `#py` or `# python` forces Python; a leading `>>` forces a goal;
     `%%shad run [options]` runs a goal with options (--vault, --provider, -o NAME ...).
  2. Magics (%), shell escapes (!), help (?) and empty cells are Python (write `%cd notes`, not `cd notes`).
  3. Two plain words side by side ("Summarize roasting") make a goal.
  4. A last line ending in `?` makes a goal, unless it is help (`obj?`) on a defined name.
  5. A cell that compiles is Python, except names that are all undefined
     ("roasting", "cold-brew"): those are a goal.
  6. Anything else is Python, so a typo shows its SyntaxError.
Session defaults: %shad config vault=PATH provider=NAME, or the SHAD_VAULT environment variable."""


class ShadKernel(IPythonKernel):
    """An IPython kernel where a cell is a goal by default and Python still works (see ``RULE``).

    The language stays Python so papermill, nbval and every Python tool keep working; the only change
    to IPython is which code string a cell runs.
    """

    implementation = "shad"
    implementation_version = __version__

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]
        assert self.shell is not None
        try:
            self.shell.extension_manager.load_extension("shad_magics")
        except Exception as exc:  # the kernel stays usable for Python; goal cells will say %%shad is missing
            self.log.warning("shad kernel: could not load shad_magics: %s", exc)

    @property
    def banner(self) -> str:  # type: ignore[override]  # a property in IPythonKernel too
        base = super().banner or ""
        return f"{base}\nShad kernel.\n{RULE}\n"

    def _is_defined(self, name: str) -> bool:
        shell = self.shell
        assert shell is not None
        if name in shell.user_ns or hasattr(builtins, name):
            return True
        # A bare magic name runs as the magic when automagic is on (``pwd``, ``who``).
        return bool(shell.automagic) and name in shell.magics_manager.magics["line"]

    async def do_execute(
        self,
        code: str,
        silent: bool,
        store_history: bool = True,
        user_expressions: dict[str, Any] | None = None,
        allow_stdin: bool = False,
        *,
        cell_meta: dict[str, Any] | None = None,
        cell_id: str | None = None,
    ) -> dict[str, Any]:
        """Run a goal cell as ``%%shad run`` with the session defaults; run any other cell as IPython does."""
        assert self.shell is not None
        # Silent requests come from tools (variable inspectors, completers' helpers), never from a person
        # typing a goal: they run as Python, so a tool can never start a run by accident.
        if not silent:
            cell = classify_cell(code, is_defined=self._is_defined, transform=self.shell.transform_cell)
            if cell.kind is CellKind.GOAL:
                code = goal_magic(cell.goal)
        reply: dict[str, Any] = await super().do_execute(  # type: ignore[no-untyped-call]
            code,
            silent,
            store_history,
            user_expressions,
            allow_stdin,
            cell_meta=cell_meta,
            cell_id=cell_id,
        )
        return reply
