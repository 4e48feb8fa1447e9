"""The layers hold: import-linter's contracts (pyproject.toml) are kept, and a private module (``_x.py``)
is imported only from inside its own package."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "shad_magics", "shad_kernel", "widgets")


def _imports(path: Path, module: str, package: str) -> list[tuple[int, str]]:
    """Every project module (or name) ``path`` imports, as absolute dotted names."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            found += [(node.lineno, f"{source}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return [(line, name) for line, name in found if name.split(".")[0] in PACKAGES]


def private_imports_from_outside() -> list[str]:
    bad = []
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            package = module if parts[-1] == "__init__" else module.rpartition(".")[0]
            for line, name in _imports(path, module, package):
                pieces = name.split(".")
                for i, piece in enumerate(pieces):
                    if piece.startswith("_") and not piece.startswith("__"):
                        owner = ".".join(pieces[:i])
                        if module != owner and not module.startswith(owner + "."):
                            bad.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
                        break
    return bad


def test_private_modules_are_imported_only_inside_their_package() -> None:
    assert private_imports_from_outside() == []


def test_the_checker_sees_a_private_import_from_outside(tmp_path: Path) -> None:
    """The check above can fail: an import of another package's private module is reported."""
    target = ROOT / "widgets" / "_layers_probe.py"
    target.write_text("from engine.runs._context import RunContext\n", encoding="utf-8")
    try:
        assert private_imports_from_outside() == [
            "widgets/_layers_probe.py:1 imports engine.runs._context.RunContext"
        ]
    finally:
        target.unlink()


def test_import_contracts_are_kept() -> None:
    lint_imports = shutil.which("lint-imports")
    if lint_imports is None:
        pytest.fail("lint-imports is missing: pip install -e '.[dev]' installs import-linter")
    proc = subprocess.run([lint_imports, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout
