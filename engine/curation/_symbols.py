"""Symbols of one code file: Python with ``ast``; other languages with tree-sitter when the
``tree_sitter`` package and that language's grammar package are importable (``pip install
'shad[symbols]'``), otherwise a reason why not.

The symbols are the definitions a reader of the module can reach: top-level classes and functions,
and what a class (or an impl, trait, interface, module) defines, recursively; a function's own local
definitions are not part of the module's interface and are left out."""

from __future__ import annotations

import ast
import importlib
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath
from typing import Any

from .. import pyast

__all__ = ["ModuleSymbols", "Symbol", "extract", "module_name", "symbol_language"]

# Code languages (``_select.CODE_LANGUAGES`` values) that have no symbols to index: config and markup.
NOT_CODE = frozenset(
    {"toml", "yaml", "json", "ini", "xml", "html", "css", "scss", "less", "markdown", "text", "rst",
     "asciidoc", "dockerfile", "makefile", "just", "cmake", "hcl", "sql", "graphql", "protobuf"}
)  # fmt: skip
# language -> (grammar module, the function in it that returns the language)
GRAMMARS: dict[str, tuple[str, str]] = {
    "javascript": ("tree_sitter_javascript", "language"),
    "jsx": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "php": ("tree_sitter_php", "language_php"),
}
# tree-sitter node type -> kind of definition
_DEFINITIONS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "function_definition": "function",
    "function_item": "function",
    "function_signature_item": "function",
    "method_definition": "method",
    "method_declaration": "method",
    "constructor_declaration": "method",
    "method": "method",
    "singleton_method": "method",
    "class_declaration": "class",
    "abstract_class_declaration": "class",
    "class_specifier": "class",
    "class": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
    "type_spec": "type",
    "struct_item": "struct",
    "enum_item": "enum",
    "trait_item": "trait",
    "impl_item": "impl",
    "mod_item": "module",
    "module": "module",
    "namespace_definition": "namespace",
}
_CONTAINERS = frozenset({"class", "interface", "trait", "impl", "module", "namespace"})
_HAS_METHODS = frozenset({"class", "interface", "trait", "impl"})  # a function in one is a method
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})


@dataclass
class Symbol:
    name: str  # qualified inside the module: "Foo.bar"
    kind: str  # class, function, method, interface, type, struct, enum, trait, impl, module, namespace
    line: int  # 1-based
    signature: str
    doc: str = ""  # the first line of its docstring (Python)


@dataclass
class ModuleSymbols:
    module: str  # "pkg.mod" for Python, the source path for other languages
    path: str  # in the source
    language: str
    doc: str = ""
    symbols: list[Symbol] = field(default_factory=list)

    def qualified(self, symbol: Symbol) -> str:
        return f"{self.module}.{symbol.name}" if self.language == "python" else f"{self.module}:{symbol.name}"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["symbols"] = [{**asdict(s), "qualified": self.qualified(s)} for s in self.symbols]
        return data


def module_name(path: str, language: str) -> str:
    """``pkg/mod.py`` -> ``pkg.mod``, ``pkg/__init__.py`` -> ``pkg``; other languages keep the path."""
    if language != "python":
        return path
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def symbol_language(language: str) -> bool:
    """Whether files of ``language`` have symbols to index (code, not config or markup)."""
    return language not in NOT_CODE


def extract(text: str, path: str, language: str) -> ModuleSymbols | str:
    """The module's symbols, or the reason they cannot be read."""
    if language == "python":
        return _python(text, path)
    return _tree_sitter(text, path, language)


# --- Python ------------------------------------------------------------------------------------------


def _first_line(doc: str | None) -> str:
    return doc.strip().splitlines()[0].strip() if doc and doc.strip() else ""


def _python(text: str, path: str) -> ModuleSymbols | str:
    try:
        tree = pyast.parse(text, filename=path)
    except SyntaxError as exc:
        return f"Python syntax error at line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"Python source not parsable: {type(exc).__name__}"
    found: list[Symbol] = []

    def visit(body: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases] + [ast.unparse(k) for k in node.keywords]
                signature = f"class {node.name}" + (f"({', '.join(bases)})" if bases else "")
                found.append(
                    Symbol(
                        prefix + node.name,
                        "class",
                        node.lineno,
                        signature,
                        _first_line(ast.get_docstring(node)),
                    )
                )
                visit(node.body, f"{prefix}{node.name}.", True)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                head = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
                signature = f"{head} {node.name}({ast.unparse(node.args)})"
                if node.returns is not None:
                    signature += f" -> {ast.unparse(node.returns)}"
                kind = "method" if in_class else "function"
                found.append(
                    Symbol(
                        prefix + node.name, kind, node.lineno, signature, _first_line(ast.get_docstring(node))
                    )
                )

    try:
        visit(tree.body, "", False)
    except RecursionError:
        return "Python source nests too deeply to index"
    module = module_name(path, "python")
    return ModuleSymbols(module, path, "python", _first_line(ast.get_docstring(tree)), found)


# --- tree-sitter -------------------------------------------------------------------------------------

_PARSERS: dict[str, Any] = {}


def _parser(language: str) -> Any:
    """A tree-sitter parser for ``language``, or the reason there is none (a ``str``)."""
    if language in _PARSERS:
        return _PARSERS[language]
    if language not in GRAMMARS:
        return f"no symbol extraction for {language} yet"
    try:
        ts = importlib.import_module("tree_sitter")
    except ImportError:
        return "tree-sitter is not installed (pip install 'shad[symbols]')"
    module, function = GRAMMARS[language]
    try:
        grammar = importlib.import_module(module)
    except ImportError:
        return f"no tree-sitter grammar for {language} installed (pip install {module.replace('_', '-')})"
    try:
        parser = ts.Parser(ts.Language(getattr(grammar, function)()))
    except Exception as exc:  # an old tree-sitter API, or a grammar built for another ABI
        return f"tree-sitter cannot load the {language} grammar: {type(exc).__name__}: {exc}"
    _PARSERS[language] = parser
    return parser


def _text(node: Any) -> str:
    return bytes(node.text or b"").decode("utf-8", errors="replace")


def _name(node: Any) -> str:
    named = node.child_by_field_name("name")
    if named is not None:
        return _text(named)
    if node.type == "impl_item":
        target = node.child_by_field_name("type")
        trait = node.child_by_field_name("trait")
        if target is not None:
            return (f"{_text(trait)} for " if trait is not None else "") + _text(target)
    declarator = node.child_by_field_name("declarator")  # C and C++: int *f(void) -> f
    while declarator is not None:
        if declarator.type in ("identifier", "field_identifier", "qualified_identifier", "destructor_name"):
            return _text(declarator)
        declarator = declarator.child_by_field_name("declarator")
    return ""


def _signature(node: Any) -> str:
    body = node.child_by_field_name("body")
    end = body.start_byte if body is not None else node.end_byte
    raw = bytes(node.text or b"")[: max(0, end - node.start_byte)].decode("utf-8", errors="replace")
    text = " ".join(raw.split()).rstrip("{ =").strip()
    return text if len(text) <= 200 else text[:199] + "…"


def _receiver(node: Any) -> str:
    """Go: the receiver's type of a method, ``(s *Server) Start`` -> ``Server``."""
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return ""
    stack = [receiver]
    while stack:
        current = stack.pop()
        if current.type == "type_identifier":
            return _text(current)
        stack.extend(reversed(current.named_children))
    return ""


def _tree_sitter(text: str, path: str, language: str) -> ModuleSymbols | str:
    parser = _parser(language)
    if isinstance(parser, str):
        return parser
    tree = parser.parse(text.encode("utf-8"))
    found: list[Symbol] = []
    stack: list[tuple[Any, str, str]] = [(tree.root_node, "", "")]  # node, prefix, enclosing kind
    while stack:
        node, prefix, enclosing = stack.pop()
        for child in reversed(node.named_children):
            kind = _DEFINITIONS.get(child.type)
            target = child
            if kind is None and child.type == "variable_declarator":
                value = child.child_by_field_name("value")
                if value is not None and value.type in _FUNCTION_VALUES:
                    kind = "function"
            if kind is None:
                stack.append((child, prefix, enclosing))
                continue
            name = _name(target)
            if not name:
                stack.append((child, prefix, enclosing))
                continue
            owner = _receiver(child) if child.type == "method_declaration" and language == "go" else ""
            qualified = f"{prefix}{owner + '.' if owner else ''}{name}"
            if kind == "function" and enclosing in _HAS_METHODS:
                kind = "method"
            found.append(Symbol(qualified, kind, child.start_point[0] + 1, _signature(child)))
            if kind in _CONTAINERS:
                stack.append((child, qualified + ".", kind))
    found.sort(key=lambda s: (s.line, s.name))
    return ModuleSymbols(path, path, language, "", found)
