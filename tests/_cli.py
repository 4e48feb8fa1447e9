"""Calling the ``shad`` command in-process, as the CLI tests do: exit code, stdout and stderr of one call."""

from __future__ import annotations

import json
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
