"""Spec-first test stubs (seed §2.11.2, step 1): after the contracts, before any implementation, a test plan
and tests that pin the contracts down — every public name the contracts export can be imported and is what
the contracts say it is (a class, a function). They need no model, so an offline run gets them too; the
post-implementation pass then adds tests of behaviour.
"""

from __future__ import annotations

from ..output import ExportIndex, ManifestFile

__all__ = ["STUB_PLAN", "STUB_TESTS", "contract_stubs"]

STUB_TESTS = "tests/test_contracts.py"
STUB_PLAN = "TEST_PLAN.md"
_CALLABLE = {"class", "function"}


def _python_contracts(index: ExportIndex, contract_files: set[str]) -> list[tuple[str, str, str]]:
    """(module, name, kind) of every public Python name the contract files export, sorted."""
    names: dict[str, list[str]] = {}
    for module, path in index.modules.items():
        names.setdefault(path, []).append(module)
    module_of = {path: _importable(path, found) for path, found in names.items()}
    found = set()
    for e in index.exports:
        path = e["from"]
        public = not e["symbol"].startswith("_") and e.get("type") != "module"
        if public and path in contract_files and path.endswith((".py", ".pyi")) and path in module_of:
            found.add((module_of[path], e["symbol"], e.get("type", "variable")))
    return sorted(found)


def _importable(path: str, names: list[str]) -> str:
    """The name a test run from the project's root imports a file by: its path from the root (a ``src/``
    layout's without ``src``), as namespace packages allow even without ``__init__.py``."""
    dotted = path.rsplit(".", 1)[0].replace("/", ".").removesuffix(".__init__")
    for preferred in (dotted.removeprefix("src."), dotted):
        if preferred in names:
            return preferred
    return max(names, key=len)


def contract_stubs(index: ExportIndex, contract_files: set[str], node: str) -> list[ManifestFile]:
    """``TEST_PLAN.md`` and ``tests/test_contracts.py`` for the Python names of ``contract_files``; nothing
    when they export none (TypeScript contracts are pinned by ``tsc`` at the build level instead)."""
    contracts = _python_contracts(index, contract_files)
    if not contracts:
        return []
    rows = "\n".join(f"    ({m!r}, {n!r}, {k!r})," for m, n, k in contracts)
    tests = f'''"""Spec-first stubs written by Shad from the contracts: each exported name exists, its kind

Behaviour is tested by the post-implementation tests; these fail as soon as a contract goes missing.
"""

import importlib

CONTRACTS = [
{rows}
]


def test_every_contract_is_defined() -> None:
    for module, name, kind in CONTRACTS:
        imported = importlib.import_module(module)
        assert hasattr(imported, name), f"{{module}} does not define {{name}}"
        value = getattr(imported, name)
        if kind in {sorted(_CALLABLE)!r}:
            assert callable(value), f"{{module}}.{{name}} should be a {{kind}}"
'''
    plan = ["# Test plan", "", "Written by Shad after the contracts, before the implementation.", ""]
    plan += ["| module | name | kind | to test |", "|---|---|---|---|"]
    for m, n, k in contracts:
        todo = "behaviour on typical, edge and invalid inputs" if k in _CALLABLE else "its value"
        plan.append(f"| `{m}` | `{n}` | {k} | {todo} |")
    return [
        ManifestFile.make(STUB_PLAN, "\n".join(plan) + "\n", source_nodes=[node]),
        ManifestFile.make(STUB_TESTS, tests, source_nodes=[node]),
    ]
