"""Import validation (seed §2.7.2, "post-generation validation"): every import in the manifest resolves to
a file of the manifest, the standard library or a declared dependency, and every imported name exists.

Generated code's most common fault is an import of something no file provides; this finds it without
running anything. When a name is ambiguous (a local module shadowing a declared package, a star import
from outside) the check stays silent rather than raise a false alarm.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from . import _typescript as ts
from ._deps import npm_dependencies, parse_pyproject, parse_requirements, python_dependencies, top_level
from ._exports import ExportIndex, build_export_index, names_by_file, python_modules
from ._integrity import Finding
from ._manifest import Manifest
from ._python import ANY, PyImport, absolute_targets

__all__ = ["ImportReport", "validate_imports"]

_NODE_BUILTINS = frozenset(
    "assert async_hooks buffer child_process cluster console constants crypto dgram diagnostics_channel dns "
    "domain events fs http http2 https inspector module net os path perf_hooks process punycode querystring "
    "readline repl stream string_decoder sys test timers tls trace_events tty url util v8 vm wasi "
    "worker_threads zlib".split()
)


@dataclass
class ImportReport:
    """What does not resolve: ``missing_modules`` and ``missing_symbols`` (the seed's shape), and the same
    as findings with line numbers (``check="imports"``)."""

    missing_modules: list[dict[str, str]] = field(default_factory=list)
    missing_symbols: list[dict[str, str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    _seen: set[tuple[str, ...]] = field(default_factory=set, init=False, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"missing_modules": list(self.missing_modules), "missing_symbols": list(self.missing_symbols)}

    def _module(self, file: str, line: int, name: str, reason: str) -> None:
        if ("module", file, name, reason) not in self._seen:
            self._seen.add(("module", file, name, reason))
            self.missing_modules.append({"file": file, "import": name, "reason": reason})
        self.findings.append(Finding(file, line, f"cannot import {name}: {reason}", "imports"))

    def _symbol(self, file: str, line: int, symbol: str, module: str, reason: str) -> None:
        if ("symbol", file, symbol, module, reason) not in self._seen:
            self._seen.add(("symbol", file, symbol, module, reason))
            self.missing_symbols.append({"file": file, "symbol": symbol, "module": module, "reason": reason})
        self.findings.append(
            Finding(file, line, f"cannot import {symbol} from {module}: {reason}", "imports")
        )


def validate_imports(manifest: Manifest, index: ExportIndex | None = None) -> ImportReport:
    """Check every Python and TypeScript/JavaScript import of the manifest (see the module docstring).

    Declared dependencies are ``manifest.dependencies`` plus whatever the manifest's own ``pyproject.toml``,
    ``requirements*.txt`` and ``package.json`` files declare.
    """
    index = index or build_export_index(manifest)
    report = ImportReport()
    _check_python(manifest, index, report)
    _check_scripts(manifest, index, report)
    return report


# A test file may import the runner that runs it (the ``tests`` check runs pytest by definition).
_TEST_RUNNER = frozenset({"pytest", "_pytest"})


def _is_test_file(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return (
        name == "conftest.py"
        or name.startswith("test_")
        or name.endswith("_test.py")
        or "tests" in parts[:-1]
    )


def _python_deps(manifest: Manifest) -> set[str]:
    reqs: list[str] = []
    for f in manifest.files:
        name = f.path.rsplit("/", 1)[-1]
        if name == "pyproject.toml":
            reqs += parse_pyproject(f.content)
        elif name.startswith("requirements") and name.endswith(".txt"):
            reqs += parse_requirements(f.content)
    declared = python_dependencies(reqs) + [n for d in manifest.dependencies for n in (*top_level(d), d)]
    return {d.casefold() for d in declared}


def _check_python(manifest: Manifest, index: ExportIndex, report: ImportReport) -> None:
    parsed, names = python_modules(manifest)
    modules = {m: p for m, p in index.modules.items() if p in names}
    known = {".".join(m.split(".")[: n + 1]) for m in modules for n in range(m.count(".") + 1)}
    external = {name.casefold() for name in sys.stdlib_module_names} | _python_deps(manifest)
    by_file = names_by_file(index)
    for path, mod in parsed.items():
        for imp in mod.imports:
            shown = "." * imp.level + imp.module
            targets = absolute_targets(path, names[path], imp)
            if imp.level and not targets:
                report._module(path, imp.line, shown, "relative import climbs above the top-level package")
                continue
            target = next((t for t in targets if t in known), None)
            top = (targets[0] if targets else imp.module).split(".")[0]
            shadowed = imp.level == 0 and (
                top.casefold() in external or (top in _TEST_RUNNER and _is_test_file(path))
            )
            if target is None:
                if not shadowed:
                    report._module(path, imp.line, shown, _why_missing(imp, targets, known))
                continue
            if not shadowed:
                where = index.modules.get(target)
                provided = by_file.get(where, set()) if where else set()
                _check_names(report, path, imp, target, provided, where, known)


def _why_missing(imp: PyImport, targets: list[str], known: set[str]) -> str:
    if imp.level:
        return f"it resolves to {targets[0]}, which is not in the manifest"
    top = imp.module.split(".")[0]
    if top in known:
        return f"the manifest has the package {top} but no module {imp.module}"
    return "not in the manifest, the standard library or the declared dependencies"


def _check_names(
    report: ImportReport,
    path: str,
    imp: PyImport,
    target: str,
    provided: set[str],
    where: str | None,
    known: set[str],
) -> None:
    if ANY in provided:
        return
    for name in imp.names:
        if name == "*" or name in provided or f"{target}.{name}" in known:
            continue
        reason = f"not defined in {where}" if where else f"{target} is a folder with no module {name}"
        report._symbol(path, imp.line, name, target, reason)


def _check_scripts(manifest: Manifest, index: ExportIndex, report: ImportReport) -> None:
    scripts = [f for f in manifest.files if ts.is_script(f)]
    if not scripts:
        return
    paths = {f.path for f in manifest.files}
    declared = {
        d
        for f in manifest.files
        if f.path.rsplit("/", 1)[-1] == "package.json"
        for d in npm_dependencies(f.content)
    }
    declared |= set(manifest.dependencies)
    parsed = {f.path: ts.read_imports(f) for f in scripts}
    ambient = {spec for _, specs in parsed.values() for spec in specs}
    for path, (imports, _) in parsed.items():
        for imp in imports:
            target = ts.resolve(imp.spec, path, paths, index.path_aliases)
            if target == "outside":
                report._module(path, imp.line, imp.spec, "the path climbs out of the project root")
            elif target is not None:
                provided = index.bound.get(target, {ANY}) if ts.is_script_path(target) else {ANY}
                for name in imp.names:
                    if ANY not in provided and name not in provided:
                        report._symbol(path, imp.line, name, imp.spec, f"not exported by {target}")
            elif imp.spec.startswith((".", "/")) or ts.alias_for(imp.spec, index.path_aliases) is not None:
                report._module(path, imp.line, imp.spec, "no file of the manifest matches this path")
            elif not _bare_ok(imp.spec, declared, ambient):
                report._module(
                    path, imp.line, imp.spec, "not declared in package.json (and not a Node built-in)"
                )


def _bare_ok(spec: str, declared: set[str], ambient: set[str]) -> bool:
    if spec in ambient or "://" in spec or spec.startswith(("node:", "bun:")):
        return True
    parts = spec.split("/")
    name = "/".join(parts[:2]) if spec.startswith("@") else parts[0]
    types = "@types/" + name.lstrip("@").replace("/", "__")
    return name in _NODE_BUILTINS or name in declared or types in declared or name in ambient
