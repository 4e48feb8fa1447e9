"""Pass 1 of contracts-first generation (seed §2.7.2): the export index, symbol -> file.

Implementation nodes get it as ground truth ("import from these; do not invent paths"), and the import
check uses the same index, so what a prompt promises and what the checker accepts are one thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import _typescript as ts
from ._manifest import Manifest
from ._python import ANY, PyModule, absolute_targets, is_python, module_names, parse_module

__all__ = ["ExportIndex", "build_export_index", "names_by_file", "python_modules"]


@dataclass
class ExportIndex:
    """Exports ``[{"symbol", "from", "type"}]``, TypeScript path aliases, importable module -> file."""

    exports: list[dict[str, str]] = field(default_factory=list)
    path_aliases: dict[str, str] = field(default_factory=dict)
    modules: dict[str, str] = field(default_factory=dict)
    # Every top-level name each file binds (path -> names), private ones and plain imports included:
    # wider than ``exports`` when ``__all__`` narrows them, and what ``from m import a`` may really take.
    bound: dict[str, set[str]] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The seed's shape: ``{"exports": [...], "path_aliases": {...}}``."""
        return {"exports": [dict(e) for e in self.exports], "path_aliases": dict(self.path_aliases)}

    def exporters(self, module: str) -> set[str]:
        """The names ``module`` provides (``"*"`` among them: it can provide any name, e.g. through a
        star import from outside the manifest or a module ``__getattr__``); empty for an unknown module."""
        path = self.modules.get(module)
        if path is None:
            return set()
        return {e["symbol"] for e in self.exports if e["from"] == path} | self.bound.get(path, set())


def names_by_file(index: ExportIndex) -> dict[str, set[str]]:
    """What every file provides (as ``exporters`` would say for its module), in one pass over the index."""
    found: dict[str, set[str]] = {path: set(names) for path, names in index.bound.items()}
    for e in index.exports:
        found.setdefault(e["from"], set()).add(e["symbol"])
    return found


def build_export_index(manifest: Manifest) -> ExportIndex:
    """The export index of a manifest's Python, TypeScript and JavaScript files. Files that do not parse
    are left out (syntax is another check)."""
    index = ExportIndex()
    parsed, names = python_modules(manifest)
    for path, found in names.items():
        for name in found[:1]:
            index.modules.setdefault(name, path)
    for path, found in names.items():
        for name in found[1:]:
            index.modules.setdefault(name, path)
    _resolve_stars(parsed, names, index.modules)
    for path, mod in parsed.items():
        index.bound[path] = set(mod.bound) | ({ANY} if "__getattr__" in mod.bound else set())
        index.exports += _python_exports(mod, names[path], parsed, index.modules)
    script = ts.read_exports(manifest.files)
    index.exports += script.exports
    index.bound.update(script.bound)
    for key, path in script.modules.items():
        index.modules.setdefault(key, path)
    index.path_aliases = ts.path_aliases(manifest.files)
    return index


def python_modules(manifest: Manifest) -> tuple[dict[str, PyModule], dict[str, list[str]]]:
    """The parsed Python files (path -> module) and the importable names of every Python file."""
    files = [f for f in manifest.files if is_python(f)]
    names = module_names(files)
    parsed: dict[str, PyModule] = {}
    for f in files:
        if f.path in names:
            mod = parse_module(f)
            if mod is not None:
                parsed[f.path] = mod
    return parsed, names


def _public(mod: PyModule) -> list[str]:
    """What ``from mod import *`` gives: ``__all__`` when literal, else the names without a leading ``_``."""
    if mod.all_names is not None:
        return list(mod.all_names)
    return [n for n in mod.bound if not n.startswith("_")]


def _resolve_stars(parsed: dict[str, PyModule], names: dict[str, list[str]], modules: dict[str, str]) -> None:
    """Fold ``from m import *`` into the importer's names, to a fixed point (stars can chain); a star
    from outside the manifest makes the importer provide any name."""
    for _ in range(len(parsed) + 1):
        changed = False
        for path, mod in parsed.items():
            for star in mod.stars:
                targets = absolute_targets(path, names[path], star)
                source = next((parsed.get(modules.get(t, "")) for t in targets if t in modules), None)
                new = (
                    {ANY: "variable"}
                    if source is None
                    else {n: source.bound.get(n, "variable") for n in _public(source)}
                )
                if source is not None and ANY in source.bound:
                    new[ANY] = "variable"
                for name, kind in new.items():
                    if name not in mod.bound:
                        mod.bound[name] = kind
                        changed = True
        if not changed:
            return


def _python_exports(
    mod: PyModule, names: list[str], parsed: dict[str, PyModule], modules: dict[str, str]
) -> list[dict[str, str]]:
    """A module's public names with their kinds; a re-exported name takes the kind it has where it is
    defined, and imports count as exports only in ``__init__`` files or when ``__all__`` lists them."""
    is_init = mod.path.rsplit("/", 1)[-1].startswith("__init__.")
    if mod.all_names is not None:
        chosen = [n for n in mod.all_names if n != ANY]
    else:
        chosen = [n for n in _public(mod) if n != ANY and (is_init or n not in mod.reexports)]
    out = []
    for name in dict.fromkeys(chosen):
        kind = mod.bound.get(name, "variable")
        if name in mod.reexports:
            kind = _origin_kind(mod, name, names, parsed, modules) or kind
        elif names and f"{names[0]}.{name}" in modules and name not in mod.bound:
            kind = "module"
        out.append({"symbol": name, "from": mod.path, "type": kind})
    return out


def _origin_kind(
    mod: PyModule, name: str, names: list[str], parsed: dict[str, PyModule], modules: dict[str, str]
) -> str | None:
    imp, original = mod.reexports[name]
    if not original:
        return "module"
    for target in absolute_targets(mod.path, names, imp):
        if f"{target}.{original}" in modules:
            return "module"
        source = parsed.get(modules.get(target, ""))
        if source is not None and original in source.bound and original not in source.reexports:
            return source.bound[original]
    return None
