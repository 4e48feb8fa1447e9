"""The software-run options of ``%%shad run`` (as ``shad run``'s): how the code is checked, how tests are
written, and where it may be written. The folder is ``--output-dir``: ``-o`` binds the result to a name."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from engine.config import TEST_MODES, VERIFY_LEVELS

from ._errors import ShadUsageError

__all__ = ["add_software_arguments", "software_options"]


def add_software_arguments(p: argparse.ArgumentParser) -> None:
    """The software-run options of ``shad run``; the folder is ``--output-dir`` (``-o`` binds a name)."""
    add = p.add_argument
    add("--verify", choices=VERIFY_LEVELS, help="How the code is checked (default: basic).")
    add("--block-on", action="append", default=[], metavar="CHECKS", help="Checks that also block.")
    add("--warn-only", action="append", default=[], metavar="CHECKS", help="Checks that only warn.")
    add("--tests", choices=TEST_MODES, help="How tests are written (default: stubs plus a post pass).")
    add("--write-files", action="store_true", help="Write the code into --output-dir DIR.")
    add("--output-dir", metavar="DIR", help="Nothing is written unless --write-files --output-dir DIR.")
    add("--overwrite", action="store_true", help="Let --write-files replace existing files.")


def software_options(ns: argparse.Namespace) -> dict[str, Any]:
    """``RunConfig`` fields of the software options given on the line; bad check names and a folder
    without --write-files (or the reverse) are usage errors before any run starts."""
    opts: dict[str, Any] = {}
    if ns.verify is not None:
        opts["verify"] = ns.verify
    if ns.tests is not None:
        opts["tests"] = ns.tests
    blocking = _checks("--block-on", ns.block_on)
    warning = _checks("--warn-only", ns.warn_only)
    both = [name for name in blocking if name in warning]
    if both:
        raise ShadUsageError(
            f"{', '.join(both)} cannot be both --block-on and --warn-only",
            hint="name each check in one option",
        )
    if ns.block_on:
        opts["block_on"] = blocking
    if ns.warn_only:
        opts["warn_only"] = warning
    if ns.write_files and not ns.output_dir:
        raise ShadUsageError(
            "--write-files needs the folder to write into", hint="add --output-dir DIR (-o binds a name)"
        )
    if ns.output_dir and not ns.write_files:
        raise ShadUsageError(
            f"--output-dir {ns.output_dir} is given without --write-files",
            hint="add --write-files to write the code there (without it a run only keeps the manifest)",
        )
    if ns.write_files:
        opts["write_files"], opts["output"] = True, ns.output_dir
    if ns.overwrite:
        opts["overwrite"] = True
    return opts


def _checks(option: str, values: Sequence[str]) -> tuple[str, ...]:
    """Comma-separated check names (repeatable), read as ``shad run`` reads them; an unknown one is a
    usage error of the line."""
    if not values:
        return ()
    from engine.errors import UsageError
    from engine.verify import check_names

    try:
        return check_names(option, values)
    except UsageError as exc:
        raise ShadUsageError(exc.message, hint=exc.hint) from None
