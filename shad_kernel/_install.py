"""``python -m shad_kernel install``: write the ``shad`` kernelspec where Jupyter will find it.

``pip install`` already ships the kernelspec (``share/jupyter/kernels/shad`` in the environment); this
command is for split environments, where Jupyter runs from one Python and Shad lives in another: the spec
it writes names this Python's executable, so Jupyter starts the kernel in the right environment.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_core.paths import jupyter_path

from engine.errors import ShadError, UsageError

__all__ = ["KERNEL_NAME", "KernelInstallError", "install", "kernel_spec", "main"]

KERNEL_NAME = "shad"
RESOURCES = Path(__file__).resolve().parent / "resources"
_LOGOS = ("logo-32x32.png", "logo-64x64.png")


class KernelInstallError(ShadError):
    """The kernelspec could not be written (no permission, a prefix that is not a folder ...)."""


def kernel_spec(executable: str | None = None, display_name: str | None = None) -> dict[str, Any]:
    """The kernel.json contents: the shipped template with ``argv[0]`` set to ``executable`` and the
    capabilities (debugger, encryption, protocol version) the installed ipykernel declares for its spec."""
    spec: dict[str, Any] = json.loads((RESOURCES / "kernel.json").read_text(encoding="utf-8"))
    spec["argv"][0] = executable or sys.executable
    if display_name:
        spec["display_name"] = display_name
    native = _ipykernel_spec()
    spec["metadata"] = {**spec.get("metadata", {}), **native.get("metadata", {})}
    if "kernel_protocol_version" in native:
        spec["kernel_protocol_version"] = native["kernel_protocol_version"]
    return spec


def _ipykernel_spec() -> dict[str, Any]:
    # The shipped template must suit every supported ipykernel; an installed spec can say exactly what
    # this one supports (ipykernel 7 adds CurveZMQ encryption, which silences its plain-TCP warning).
    try:
        from ipykernel.kernelspec import get_kernel_dict

        native: dict[str, Any] = get_kernel_dict()
    except Exception:
        return {}
    return native


def install(
    *,
    user: bool = False,
    sys_prefix: bool = False,
    prefix: str | os.PathLike[str] | None = None,
    name: str = KERNEL_NAME,
    display_name: str | None = None,
) -> Path:
    """Install the kernelspec and return its folder.

    With no location the spec goes where ``jupyter kernelspec install`` puts it (system-wide);
    ``user`` means the per-user Jupyter folder, ``sys_prefix`` this environment, ``prefix`` any prefix
    (the spec lands in ``PREFIX/share/jupyter/kernels/NAME``).
    """
    if sum((user, sys_prefix, prefix is not None)) > 1:
        raise UsageError(
            "choose one place to install the kernelspec",
            hint="pass only one of --user, --sys-prefix, --prefix",
        )
    target = sys.prefix if sys_prefix else None if prefix is None else os.path.abspath(os.fspath(prefix))
    manager = KernelSpecManager(log=_quiet_logger())
    with tempfile.TemporaryDirectory(prefix="shad-kernelspec-") as tmp:
        source = Path(tmp) / name
        source.mkdir()
        spec = kernel_spec(display_name=display_name)
        (source / "kernel.json").write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")
        for logo in _LOGOS:
            shutil.copyfile(RESOURCES / logo, source / logo)
        try:
            destination = manager.install_kernel_spec(str(source), kernel_name=name, user=user, prefix=target)
        except ValueError as exc:  # jupyter_client's check of the kernel name
            raise UsageError(
                f"invalid kernel name {name!r}", hint="use ASCII letters, digits, '-', '.' and '_' only"
            ) from exc
        except PermissionError as exc:
            where = exc.filename or target or "the system-wide Jupyter folder"
            raise KernelInstallError(
                f"no permission to write the kernelspec in {where}",
                hint="install with --user, --sys-prefix or --prefix DIR instead",
            ) from exc
        except OSError as exc:
            where = exc.filename or target or "the system-wide Jupyter folder"
            raise KernelInstallError(
                f"cannot write the kernelspec in {where}: {exc.strerror or exc}",
                hint="--prefix must be a writable folder (the spec goes to PREFIX/share/jupyter/kernels)",
            ) from exc
    return Path(destination)


def _quiet_logger() -> logging.Logger:
    # jupyter_client warns through logging when the folder is not on its search path; we say it ourselves.
    logger = logging.getLogger("shad_kernel.install")
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    return logger


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m shad_kernel install",
        description="Install the 'shad' Jupyter kernelspec for this Python "
        f"({sys.executable}). Without an option it goes system-wide.",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="install for the current user only")
    where.add_argument(
        "--sys-prefix", action="store_true", help=f"install into this environment ({sys.prefix})"
    )
    where.add_argument("--prefix", metavar="PREFIX", help="install into PREFIX/share/jupyter/kernels")
    parser.add_argument("--name", default=KERNEL_NAME, help="the kernelspec's name (default: %(default)s)")
    parser.add_argument("--display-name", help="the name Jupyter shows (default: 'Shad (Python 3)')")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m shad_kernel install [options]``; return the exit code (errors: one line on stderr)."""
    args = _parser().parse_args(argv)
    try:
        destination = install(
            user=args.user,
            sys_prefix=args.sys_prefix,
            prefix=args.prefix,
            name=args.name,
            display_name=args.display_name,
        )
    except ShadError as exc:
        print(f"error: {exc.message}" + (f" (hint: {exc.hint})" if exc.hint else ""), file=sys.stderr)
        return exc.exit_code
    print(f"Installed the '{destination.name}' kernelspec in {destination}")
    searched = {os.path.realpath(folder) for folder in jupyter_path("kernels")}
    if os.path.realpath(destination.parent) not in searched:
        print(
            f"Note: Jupyter does not search {destination.parent} by default; "
            f"add {destination.parent.parent} to JUPYTER_PATH.",
            file=sys.stderr,
        )
    return 0
