"""Helpers shared by the notebook-side tests: an IPython shell with the magics loaded, a notebook run in a
real kernel with a chosen environment, and a comm that records what a widget would send to the front end
(conftest's ``comms`` fixture installs it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from comm.base_comm import BaseComm
from IPython.core.interactiveshell import ExecutionResult, InteractiveShell
from nbclient import NotebookClient

import shad_magics
from shad_magics import ShadMagics


def magics_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vault: Path) -> Iterator[InteractiveShell]:
    """An ``InteractiveShell`` with the magics loaded: offline provider, ``vault`` as the session vault,
    history under ``tmp_path``, no key or default from the environment; the names a test bound are
    removed afterwards. Use it as the body of a yield fixture."""
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    for name in ("SHAD_VAULT", "SHAD_CHECKPOINTS", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    sh = InteractiveShell.instance()
    shad_magics.load_ipython_extension(sh)
    magics = magics_of(sh)
    magics.vault, magics.provider, magics.history_dir = [str(vault)], "offline", str(tmp_path / "history")
    before = set(sh.user_ns)
    yield sh
    shad_magics.unload_ipython_extension(sh)
    for name in set(sh.user_ns) - before:
        del sh.user_ns[name]


def execute_notebook(nb: Any, cwd: Path, env: dict[str, str]) -> None:
    """Run every cell of ``nb`` in a real ``python3`` kernel started in ``cwd`` with exactly ``env`` as its
    environment (not this process's: no key or setting of the developer's leaks in)."""
    client = NotebookClient(
        nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(cwd)}}
    )
    client.execute(env=env)


def magics_of(sh: InteractiveShell) -> ShadMagics:
    magics: ShadMagics = sh.magics_manager.registry["ShadMagics"]
    return magics


def ok(result: ExecutionResult) -> Any:
    assert result.error_in_exec is None and result.error_before_exec is None, result.error_in_exec
    return result.result


class RecordingComm(BaseComm):
    """A comm that keeps every message it would send to the front end."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        super().__init__(*args, **kwargs)

    def publish_msg(
        self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
    ) -> None:
        self.sent.append((msg_type, data or {}))

    def updates(self) -> list[dict[str, Any]]:
        """The ``state`` of every update message, in order."""
        return [d["state"] for kind, d in self.sent if kind == "comm_msg" and d.get("method") == "update"]

    def custom(self) -> list[Any]:
        """The custom messages sent to the front end (``widget.send``), in order."""
        return [d["content"] for kind, d in self.sent if kind == "comm_msg" and d.get("method") == "custom"]
