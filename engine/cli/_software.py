"""The software-run options of ``shad run``: how the code is checked, how tests are written, and where (if
anywhere) it is written.

Only click and the config load with this module, so ``shad run --help`` stays instant; the checker's
names (``engine.verify``) load when the command runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import click

from ..config import TEST_MODES, VERIFY_LEVELS
from ..errors import UsageError

__all__ = ["check_names", "software_config", "software_options"]


def software_options(func: Any) -> Any:
    """``--verify``, ``--block-on``, ``--warn-only``, ``--tests``, ``--write-files``, ``--output``,
    ``--overwrite`` (listed in this order in ``--help``)."""
    options = [
        click.option(
            "--verify",
            type=click.Choice(VERIFY_LEVELS),
            default="basic",
            show_default=True,
            help="How a software run's code is checked: basic (syntax, imports, integrity), build "
            "(+ types), strict (+ tests, lint); off checks nothing.",
        ),
        click.option(
            "--block-on",
            "block_on",
            multiple=True,
            metavar="CHECKS",
            help="Comma-separated checks that also block (repeatable): syntax, imports, integrity, "
            "types, tests, lint.",
        ),
        click.option(
            "--warn-only",
            "warn_only",
            multiple=True,
            metavar="CHECKS",
            help="Comma-separated checks that only warn (repeatable).",
        ),
        click.option(
            "--tests",
            type=click.Choice(TEST_MODES),
            default=None,
            help="How a software run writes tests (default: stubs after the contracts plus a "
            "post-implementation pass).",
        ),
        click.option(
            "--write-files",
            is_flag=True,
            help="Write the code into --output DIR. Nothing is written unless --write-files --output DIR.",
        ),
        click.option(
            "--output",
            metavar="DIR",
            help="With --write-files: the folder the code is written into (nothing outside it).",
        ),
        click.option(
            "--overwrite", is_flag=True, help="Let --write-files replace existing files under --output."
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def check_names(option: str, values: Iterable[str]) -> tuple[str, ...]:
    """Comma-separated check names (repeatable) -> the checks, aliases resolved (``engine.verify``'s
    reading, loaded here so ``--help`` stays instant); an unknown name is a ``UsageError``."""
    from ..verify import check_names as read_checks

    return read_checks(option, list(values))


def software_config(
    *,
    verify: str,
    block_on: Iterable[str],
    warn_only: Iterable[str],
    tests: str | None,
    write_files: bool,
    output: str | None,
    overwrite: bool,
) -> dict[str, Any]:
    """The ``RunConfig`` fields of the software options, checked before any run starts (the config
    itself checks ``--write-files`` against ``--output``)."""
    blocking = check_names("--block-on", block_on)
    warning = check_names("--warn-only", warn_only)
    both = [name for name in blocking if name in warning]
    if both:
        raise UsageError(
            f"{', '.join(both)} cannot be both --block-on and --warn-only",
            hint="name each check in one option",
        )
    return {
        "verify": verify,
        "block_on": blocking,
        "warn_only": warning,
        "tests": tests,
        "write_files": write_files,
        "output": output,
        "overwrite": overwrite,
    }
