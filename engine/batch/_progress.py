"""Progress of a batch called from Python: in a Jupyter kernel a progress-bar widget (``tqdm.notebook``, an
ipywidgets bar; tqdm comes with papermill, ipywidgets with anywidget), elsewhere a text bar on stderr, one
step per finished row. The CLI shows its own rich bar through ``on_start`` / ``on_row`` instead."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["RowProgress", "in_notebook"]

Row = dict[str, Any]


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (where a widget can be shown)."""
    if "ipykernel" not in sys.modules:
        return False
    from IPython.core import getipython

    # Looked up by name: IPython's own typing of get_ipython differs between versions.
    shell = getattr(getipython, "get_ipython")()  # noqa: B009
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class RowProgress:
    """Wraps the caller's ``on_start`` / ``on_row``: a bar of ``rows`` steps, advanced as rows finish and
    closed by ``close()``; with ``show=False`` only the caller's callbacks run."""

    def __init__(
        self,
        show: bool,
        on_start: Callable[[int], None] | None,
        on_row: Callable[[Row], None] | None,
        description: str = "shad batch",
    ) -> None:
        self.show, self.description = show, description
        self._on_start, self._on_row = on_start, on_row
        self._bar: Any = None
        self._failed = 0

    def start(self, rows: int) -> None:
        if self.show:
            # Chosen here, not by tqdm.auto, whose guess is fooled by any IPython shell in the process.
            if in_notebook():
                from tqdm.notebook import tqdm  # type: ignore[import-untyped]
            else:
                from tqdm.std import tqdm  # type: ignore[import-untyped]

            self._bar = tqdm(total=rows, desc=self.description, unit="row", file=sys.stderr)
        if self._on_start is not None:
            self._on_start(rows)

    def row(self, row: Row) -> None:
        if self._bar is not None:
            if row["status"] != "SUCCESS" or row["error"]:
                self._failed += 1
                self._bar.set_postfix(failed=self._failed, refresh=False)
            self._bar.update(1)
        if self._on_row is not None:
            self._on_row(row)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
