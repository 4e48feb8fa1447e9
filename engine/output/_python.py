"""Python files of a manifest as modules: their importable names, the names they bind, their imports.

A file's primary module name comes from its package root (the nearest folder above it without an
``__init__.py``), so ``src/pkg/sub.py`` is ``pkg.sub`` in a ``src/`` layout and ``pkg/sub.py`` is
``pkg.sub`` in a flat one; the dotted path from the manifest root (``tests.helpers``) is kept as an alias.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import cast

from .. import pyast
from ._manifest import ManifestFile

__all__ = ["ANY", "PyImport", "PyModule", "absolute_targets", "is_python", "module_names", "parse_module"]

ANY = "*"  # in a set of bound names: the module can provide any name (a foreign star import, __getattr__)
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


@dataclass
class PyImport:
    """One imported module (``names`` empty for ``import x``): ``level`` > 0 for relative imports."""

    module: str
    names: list[str]
    level: int
    line: int


@dataclass
class PyModule:
    path: str
    bound: dict[str, str] = field(default_factory=dict)  # top-level name -> "function"|"class"|...
    reexports: dict[str, tuple[PyImport, str]] = field(default_factory=dict)  # name -> (import, its name)
    all_names: list[str] | None = None  # a literal __all__
    stars: list[PyImport] = field(default_factory=list)  # `from m import *` at top level
    imports: list[PyImport] = field(default_factory=list)  # every import that must resolve


def is_python(f: ManifestFile) -> bool:
    return f.path.endswith((".py", ".pyi")) or f.language == "python"


def module_names(files: Sequence[ManifestFile]) -> dict[str, list[str]]:
    """Each Python file's importable names, primary first: package-root name, then ``src``-less and full
    dotted paths when they differ and are valid identifiers."""
    paths = {f.path for f in files}
    names: dict[str, list[str]] = {}
    for f in files:
        if not f.path.endswith((".py", ".pyi")):
            continue
        parts = f.path.rsplit(".", 1)[0].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        folder = f.path.split("/")[:-1]
        depth = len(folder)
        while depth > 0 and "/".join([*folder[:depth], "__init__.py"]) in paths:
            depth -= 1
        candidates = [parts[depth:], parts[1:] if parts[:1] == ["src"] else [], parts]
        found: list[str] = []
        for cand in candidates:
            if cand and all(p.isidentifier() for p in cand) and ".".join(cand) not in found:
                found.append(".".join(cand))
        names[f.path] = found
    return names


def absolute_targets(path: str, names: Sequence[str], imp: PyImport) -> list[str]:
    """The absolute module an import names, once per importable name of the importing file (a relative
    import's meaning depends on which name the file is imported under); [] when it climbs past the top."""
    if imp.level == 0:
        return [imp.module]
    is_package = path.rsplit("/", 1)[-1] in ("__init__.py", "__init__.pyi")
    targets = []
    for name in names:
        parts = name.split(".") if is_package else name.split(".")[:-1]
        if imp.level - 1 >= len(parts):
            continue
        base = parts[: len(parts) - (imp.level - 1)]
        target = ".".join([*base, imp.module] if imp.module else base)
        if target not in targets:
            targets.append(target)
    return targets


def parse_module(f: ManifestFile) -> PyModule | None:
    """The bindings and imports of one file, or None when it does not parse (syntax is another check)."""
    try:
        tree = pyast.parse(f.content, filename=f.path)
    except (SyntaxError, ValueError):
        return None
    mod = PyModule(f.path)
    for node in _top_level(tree.body):
        _bind(mod, node)
    mod.imports = list(_imports(tree.body, optional=False))
    return mod


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, looking inside if/try/with blocks (they bind module names too)."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.With, ast.AsyncWith)):
            yield from _top_level(node.body)
            yield from _top_level(getattr(node, "orelse", []))
        elif (block := _as_try(node)) is not None:
            yield from _top_level(block.body)
            for handler in block.handlers:
                yield from _top_level(handler.body)
            yield from _top_level(block.orelse)
            yield from _top_level(block.finalbody)


def _as_try(node: ast.AST) -> ast.Try | None:
    """``try`` and ``try``/``except*`` (3.11+, same fields) alike."""
    if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
        return cast(ast.Try, node)
    return None


def _bind(mod: PyModule, node: ast.stmt) -> None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        mod.bound[node.name] = "function"
    elif isinstance(node, ast.ClassDef):
        mod.bound[node.name] = "class"
    elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            for name in _target_names(target):
                mod.bound.setdefault(name, "variable")
                if name == "__all__":
                    _read_all(mod, node)
    elif isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.asname or alias.name.split(".")[0]
            mod.bound.setdefault(name, "module")
            mod.reexports[name] = (PyImport(alias.name, [], 0, node.lineno), "")
    elif isinstance(node, ast.ImportFrom):
        for alias in node.names:
            if alias.name == "*":
                mod.stars.append(PyImport(node.module or "", [], node.level, node.lineno))
            else:
                name = alias.asname or alias.name
                mod.bound.setdefault(name, "variable")
                mod.reexports[name] = (
                    PyImport(node.module or "", [alias.name], node.level, node.lineno),
                    alias.name,
                )


def _target_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def _read_all(mod: PyModule, node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> None:
    """A literal ``__all__`` (list or tuple of strings, ``+=`` too); anything else leaves it unknown."""
    value = node.value
    names = [
        e.value
        for e in (value.elts if isinstance(value, (ast.List, ast.Tuple)) else [])
        if isinstance(e, ast.Constant) and isinstance(e.value, str)
    ]
    if not isinstance(value, (ast.List, ast.Tuple)) or len(names) != len(value.elts):
        mod.all_names = None  # computed: unknown, so every public name counts
        return
    if isinstance(node, ast.AugAssign):
        mod.all_names = [*(mod.all_names or []), *names]
    else:
        mod.all_names = names


def _catches_import_error(handlers: list[ast.ExceptHandler]) -> bool:
    for handler in handlers:
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        for kind in kinds:
            if kind is None or (isinstance(kind, ast.Name) and kind.id in _IMPORT_ERRORS):
                return True
    return False


def _imports(body: Sequence[ast.AST], *, optional: bool) -> Iterator[PyImport]:
    """Every import statement in the tree; those guarded by ``try: ... except ImportError`` (in the
    try body or the handler, which is its fallback) are optional and left out."""
    for node in body:
        block = _as_try(node)
        if block is not None:
            guarded = optional or _catches_import_error(block.handlers)
            yield from _imports(block.body, optional=guarded)
            for handler in block.handlers:
                yield from _imports(handler.body, optional=guarded)
            yield from _imports(block.orelse, optional=optional)
            yield from _imports(block.finalbody, optional=optional)
            continue
        if isinstance(node, ast.Import) and not optional:
            for alias in node.names:
                yield PyImport(alias.name, [], 0, node.lineno)
        elif isinstance(node, ast.ImportFrom) and not optional:
            names = [alias.name for alias in node.names]
            yield PyImport(node.module or "", names, node.level, node.lineno)
        yield from _imports(list(ast.iter_child_nodes(node)), optional=optional)
