"""TypeScript and JavaScript, read with a few regular expressions (no ``node`` needed): what each file
exports, what it imports, ``tsconfig.json`` path aliases, and whether an import resolves.

Not a parser: comments are blanked first and strings are left alone, which is enough for the
``import``/``export`` statements generated code writes. Anything unclear counts as "may export anything",
so the checker errs towards silence, never towards a false alarm.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ._manifest import ManifestFile
from ._python import ANY

__all__ = [
    "ScriptExports",
    "is_script",
    "is_script_path",
    "module_key",
    "path_aliases",
    "read_exports",
    "read_imports",
    "resolve",
]

SCRIPT_SUFFIXES = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")
_RESOLVE_SUFFIXES = (".ts", ".tsx", ".mts", ".cts", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".json")
_TOKENS = re.compile(
    r"(\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`)|//[^\n]*|/\*.*?\*/", re.S
)
_ID = r"[A-Za-z_$][\w$]*"
_SPEC = r"(?P<q>['\"])(?P<spec>[^'\"\n]+)(?P=q)"
_DECL = re.compile(
    rf"\bexport\s+(?P<default>default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:const\s+(?=enum\b))?"
    rf"(?P<kind>function\s*\*?|class|const|let|var|interface|type|enum|namespace)\s*(?P<name>{_ID})"
)
_DEFAULT = re.compile(r"\bexport\s+default\b")
_LIST = re.compile(rf"\bexport\s+(?:type\s+)?\{{(?P<items>[^}}]*)\}}(?:\s*from\s*{_SPEC})?")
_STAR = re.compile(rf"\bexport\s+(?:type\s+)?\*\s*(?:as\s+(?P<ns>{_ID})\s*)?from\s*{_SPEC}")
_OPEN = re.compile(r"\bmodule\.exports\b|\bexport\s*=")
_CJS_NAME = re.compile(rf"\bexports\.({_ID})\s*=")
_IMPORT = re.compile(rf"\bimport\s+(?:type\s+)?(?P<clause>[\w$*{{}}\s,]+?)\s*from\s*{_SPEC}")
_SIDE = re.compile(rf"\bimport\s*{_SPEC}")
_CALL = re.compile(rf"\b(?:require|import)\s*\(\s*{_SPEC}\s*\)")
_AMBIENT = re.compile(rf"\bdeclare\s+module\s+{_SPEC}")
_KINDS = {"interface": "type", "type": "type", "enum": "variable", "namespace": "module", "class": "class"}


def is_script_path(path: str) -> bool:
    return path.lower().endswith(SCRIPT_SUFFIXES)


def is_script(f: ManifestFile) -> bool:
    return is_script_path(f.path) or f.language in ("typescript", "javascript")


def module_key(path: str) -> str:
    """The path without its suffix: ``src/api/users.ts`` -> ``src/api/users``."""
    if path.endswith(".d.ts"):
        return path[: -len(".d.ts")]
    return posixpath.splitext(path)[0]


def strip_comments(text: str) -> str:
    """The text with comments blanked (their newlines kept, so line numbers stay right)."""
    return _TOKENS.sub(lambda m: m.group(1) or "\n" * m.group(0).count("\n"), text)


@dataclass
class ScriptExports:
    exports: list[dict[str, str]] = field(default_factory=list)
    bound: dict[str, set[str]] = field(default_factory=dict)  # path -> names (ANY: may export anything)
    modules: dict[str, str] = field(default_factory=dict)  # module key -> path


def read_exports(files: Sequence[ManifestFile]) -> ScriptExports:
    """Exports of every script file; ``export * from`` is followed inside the manifest to a fixed point."""
    out = ScriptExports()
    scripts = [f for f in files if is_script(f)]
    paths = {f.path for f in files}
    stars: dict[str, list[str]] = {}
    kinds: dict[str, dict[str, str]] = {}
    for f in scripts:
        text = strip_comments(f.content)
        found: dict[str, str] = {}
        for m in _DECL.finditer(text):
            kind = "function" if m["kind"].startswith("function") else _KINDS.get(m["kind"], "variable")
            found["default" if m["default"] else m["name"]] = kind
        if _DEFAULT.search(text):
            found.setdefault("default", "variable")
        for m in _LIST.finditer(text):
            for item in m["items"].split(","):
                words = item.replace("type ", " ").split()
                if words:
                    found.setdefault(words[-1], "variable")
        for m in _CJS_NAME.finditer(text):
            found.setdefault(m.group(1), "variable")
        if _OPEN.search(text):
            found[ANY] = "variable"
        for m in _STAR.finditer(text):
            if m["ns"]:
                found.setdefault(m["ns"], "module")
            else:
                target = resolve(m["spec"], f.path, paths, {})
                stars.setdefault(f.path, []).append(target if target and target != "outside" else "")
        kinds[f.path] = found
        key = module_key(f.path)
        out.modules.setdefault(key, f.path)
        if key.endswith("/index"):
            out.modules.setdefault(key[: -len("/index")], f.path)
    for _ in range(len(stars) + 1):
        changed = False
        for path, targets in stars.items():
            for target in targets:
                extra = kinds.get(target, {ANY: "variable"})
                for name, kind in extra.items():
                    if name != "default" and name not in kinds[path]:
                        kinds[path][name] = kind
                        changed = True
        if not changed:
            break
    for path, found in kinds.items():
        out.bound[path] = set(found)
        out.exports += [{"symbol": n, "from": path, "type": k} for n, k in found.items() if n != ANY]
    return out


@dataclass
class ScriptImport:
    spec: str
    names: list[str]  # symbols a named/default import needs ("default" for `import X from`)
    line: int


def read_imports(f: ManifestFile) -> tuple[list[ScriptImport], set[str]]:
    """The imports of one file (static, side-effect, re-export, ``require``, dynamic) and the module
    names it declares ambiently (``declare module "x"``)."""
    text = strip_comments(f.content)
    found: list[ScriptImport] = []

    def line(pos: int) -> int:
        return text.count("\n", 0, pos) + 1

    for m in _IMPORT.finditer(text):
        found.append(ScriptImport(m["spec"], _needed(m["clause"]), line(m.start())))
    for m in _LIST.finditer(text):
        if m["spec"]:
            names = [w.replace("type ", " ").split()[0] for w in m["items"].split(",") if w.split()]
            found.append(ScriptImport(m["spec"], names, line(m.start())))
    for pattern in (_SIDE, _STAR, _CALL):
        found += [ScriptImport(m["spec"], [], line(m.start())) for m in pattern.finditer(text)]
    return found, {m["spec"] for m in _AMBIENT.finditer(text)}


def _needed(clause: str) -> list[str]:
    """Symbols an import clause takes: ``X, { a, b as c, type D }`` -> default, a, b, D."""
    clause = clause.strip()
    names: list[str] = []
    head, _, braces = clause.partition("{")
    head = head.strip().rstrip(",").strip()
    if head and not head.startswith("*"):
        names.append("default")
    for item in braces.rstrip("} \n").split(","):
        words = item.replace("type ", " ").split()
        if words:
            names.append(words[0])
    return names


def resolve(spec: str, importer: str, paths: set[str], aliases: dict[str, str]) -> str | None:
    """The manifest file a relative or aliased specifier names, ``"outside"`` when it climbs out of the
    root, or None (not found, or a bare package name with no alias)."""
    if spec.startswith(("./", "../")) or spec in (".", ".."):
        base = posixpath.normpath(posixpath.join(posixpath.dirname(importer), spec))
        if base == ".." or base.startswith("../"):
            return "outside"
        return _candidate(base, paths)
    key = alias_for(spec, aliases)
    if key is None:
        return None
    base = posixpath.normpath(aliases[key] + spec[len(key) :])
    return "outside" if base == ".." or base.startswith("../") else _candidate(base, paths)


def alias_for(spec: str, aliases: dict[str, str]) -> str | None:
    """The longest alias that names ``spec``: equal to it, or a prefix ending in a separator-like
    character (``@/``, ``~``, ``#``) as a ``paths`` wildcard leaves it."""
    for key in sorted(aliases, key=len, reverse=True):
        if key and (spec == key or (not key[-1].isalnum() and spec.startswith(key))):
            return key
    return None


def _candidate(base: str, paths: set[str]) -> str | None:
    if base in paths:
        return base
    stem, suffix = posixpath.splitext(base)
    tries = (
        [stem + ext for ext in (".ts", ".tsx", ".mts", ".cts", ".d.ts")] if suffix in SCRIPT_SUFFIXES else []
    )
    tries += [base + ext for ext in _RESOLVE_SUFFIXES] + [f"{base}/index{ext}" for ext in _RESOLVE_SUFFIXES]
    return next((t for t in tries if t in paths), None)


def path_aliases(files: Sequence[ManifestFile]) -> dict[str, str]:
    """``compilerOptions.paths`` of the manifest's root-most ``tsconfig.json`` as prefix -> folder
    (``{"@/": "src/"}``); ``{}`` when there is none or it does not parse."""
    configs = sorted(
        (f for f in files if f.path.rsplit("/", 1)[-1] == "tsconfig.json"), key=lambda f: f.path.count("/")
    )
    if not configs:
        return {}
    config = configs[0]
    try:
        data = json.loads(re.sub(r",(\s*[}\]])", r"\1", strip_comments(config.content)))
    except json.JSONDecodeError:
        return {}
    options = data.get("compilerOptions") if isinstance(data, dict) else None
    if not isinstance(options, dict) or not isinstance(options.get("paths"), dict):
        return {}
    base_url = options.get("baseUrl")
    base_url = base_url if isinstance(base_url, str) else "."
    root = posixpath.join(posixpath.dirname(config.path), base_url)
    aliases: dict[str, str] = {}
    for pattern, targets in options["paths"].items():
        if not isinstance(targets, list) or not targets or not isinstance(targets[0], str):
            continue
        target = posixpath.normpath(posixpath.join(root, targets[0].rstrip("*")))
        if targets[0].endswith("/*") and not target.endswith("/"):
            target += "/"
        if pattern.rstrip("*"):  # "*" alone is a fallback lookup, not an alias
            aliases[pattern.rstrip("*")] = "" if target == "./" else target
    return aliases
