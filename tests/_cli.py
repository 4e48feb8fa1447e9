"""Calling the ``shad`` command in-process, as the CLI tests do: exit code, stdout and stderr of one call."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from engine.cli import main


class Result:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self) -> Any:
        return json.loads(self.out)


def caller(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """``shad(*args)`` -> ``Result``, the output of earlier calls left out."""

    def call(*args: str) -> Result:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return call


def dead_process() -> dict[str, Any]:
    """The identity a run's manifest records (``this_process``) of a real process, killed and reaped."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import json; from engine.store.history import this_process as t; "
         "print(json.dumps(t()), flush=True); input()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        process: dict[str, Any] = json.loads(child.stdout.readline())
    finally:
        child.kill()
        child.wait(30)
    return process
