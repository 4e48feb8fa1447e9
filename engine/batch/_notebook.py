"""The notebook a batch runs, checked before any row starts: readable, a parameters cell, an installed
kernel; and each CSV cell coerced to the type of the parameter's default. Separate from running the rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import pyast
from ..errors import UsageError

__all__ = ["coerce_parameter", "declared_parameters", "load_notebook", "notebook_kernel"]


def load_notebook(path: Path) -> Any:
    import nbformat  # imported here: it takes a second, and every `shad` command imports this module

    if not path.is_file():
        raise UsageError(f"notebook not found: {path}", hint="pass the .ipynb file to run for each row")
    try:
        nb = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise UsageError(f"{path.name} is not a readable notebook: {exc}", hint="pass a .ipynb file") from exc
    if not any("parameters" in cell.get("metadata", {}).get("tags", []) for cell in nb.cells):
        raise UsageError(
            f"{path.name} has no cell tagged 'parameters'",
            hint="tag the cell that sets goal, vault ... with 'parameters' so papermill can override it",
        )
    return nb


def notebook_kernel(nb: Any, requested: str | None) -> str:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    name = requested or nb.metadata.get("kernelspec", {}).get("name")
    if not name:
        raise UsageError("the notebook names no kernel", hint="pass --kernel NAME (e.g. python3)")
    try:
        KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel as exc:
        hint = "install it with: python -m shad_kernel install --user" if name == "shad" else None
        raise UsageError(
            f"kernel {name!r} is not installed",
            hint=hint or "pass --kernel with one that `jupyter kernelspec list` shows",
        ) from exc
    return str(name)


def declared_parameters(path: Path) -> dict[str, str]:
    """The parameters cell's names and the type of their default (papermill's own introspection)."""
    import papermill  # type: ignore[import-untyped]

    declared: dict[str, str] = {}
    for name, param in papermill.inspect_notebook(str(path)).items():
        kind = param["inferred_type_name"]
        if kind in ("None", ""):  # no annotation: judge by the default value
            try:
                kind = type(pyast.literal_eval(param["default"])).__name__
            except (ValueError, SyntaxError):
                kind = "str"
        declared[name] = kind
    return declared


def coerce_parameter(name: str, value: str, kind: str | None, where: str) -> Any:
    """A CSV cell (always text) as the type of the notebook's default for that parameter."""
    if name == "goal" or kind in (None, "str", "NoneType"):
        return value
    try:
        if kind == "bool":
            lowered = value.lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(value)
            return lowered in ("true", "1", "yes")
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if kind in ("list", "dict", "tuple"):
            parsed = pyast.literal_eval(value)
            if type(parsed).__name__ != kind:
                raise ValueError(value)
            return parsed
    except (ValueError, SyntaxError) as exc:
        raise UsageError(
            f"{where}: {name}={value!r} is not a valid {kind}",
            hint=f"the notebook's default for {name} is a {kind}; write the cell as one",
        ) from exc
    return value
