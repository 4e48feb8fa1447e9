"""Compiling a script under the policy: RestrictedPython's transformer plus what model-written code needs;
apart from the run-time guards, as what is refused before the script runs. Loaded inside the sandbox."""

from __future__ import annotations

import ast
import types
from typing import Any

from RestrictedPython.compile import compile_restricted_exec
from RestrictedPython.transformer import ALLOWED_FUNC_NAMES, INSPECT_ATTRIBUTES, RestrictingNodeTransformer

__all__ = [
    "DENIED_ATTRS",
    "SCRIPT_FILENAME",
    "SUPER_METHODS",
    "ScriptCompileError",
    "ShadTransformer",
    "compile_script",
    "script_line",
]

SCRIPT_FILENAME = "<script>"
RESULT_NAME = "__result__"

# Dunder methods a script may define on its own classes (called by the interpreter, never reachable by name).
EXTRA_MAGIC = frozenset({"__repr__", "__str__", "__len__", "__hash__", "__bool__", "__post_init__"})
# ``super().__init__(...)`` and its kind: the dunder methods a script's class may define, reached on super().
SUPER_METHODS = frozenset(ALLOWED_FUNC_NAMES) | EXTRA_MAGIC
DENIED_ATTRS = frozenset(INSPECT_ATTRIBUTES) | {"mro", "f_lineno", "tb_lasti", "tb_lineno", "f_lasti"}
AUG_OPS = {
    ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/=", ast.FloorDiv: "//=", ast.Mod: "%=",
    ast.Pow: "**=", ast.LShift: "<<=", ast.RShift: ">>=", ast.BitOr: "|=", ast.BitXor: "^=",
    ast.BitAnd: "&=", ast.MatMult: "@=",
}  # fmt: skip


class ScriptCompileError(Exception):
    """The script does not compile: ``kind`` is "error" (syntax) or "blocked" (policy)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class ShadTransformer(RestrictingNodeTransformer):
    """RestrictedPython's transformer plus what model-written code needs: ``__result__``, augmented
    assignment to items and attributes (through guarded helpers), annotated assignments and
    ``super().__init__(...)`` (through a guarded helper that admits the script's own classes only)."""

    def check_name(self, node: Any, name: str | None, allow_magic_methods: bool = False) -> None:
        if name == RESULT_NAME:
            return
        if allow_magic_methods and name in EXTRA_MAGIC and getattr(node, "col_offset", 0) != 0:
            return
        super().check_name(node, name, allow_magic_methods)

    def check_function_argument_names(self, node: Any) -> None:
        # Checked here as well: RestrictedPython before 9 let positional-only parameters shadow the
        # guards (``def f(_getattr_=..., /)``).
        args = node.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None:
                self.check_name(node, arg.arg)

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        value = node.value
        if (
            node.attr in SUPER_METHODS
            and isinstance(node.ctx, ast.Load)
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "super"
            and not value.args
            and not value.keywords
        ):  # super().__init__ -> _super_attr_(super(), "__init__"), checked again at run time
            call = ast.Call(
                func=ast.Name("_super_attr_", ast.Load()),
                args=[self.visit(value), ast.Constant(node.attr)],
                keywords=[],
            )
            return ast.fix_missing_locations(ast.copy_location(call, node))
        return super().visit_Attribute(node)

    def _check_attr(self, node: ast.AST, attr: str) -> None:
        if attr.startswith("_") or attr in DENIED_ATTRS:
            self.error(node, f'"{attr}" is an invalid attribute name.')

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        target, op = node.target, AUG_OPS[type(node.op)]
        if isinstance(target, ast.Attribute):
            self._check_attr(node, target.attr)
            args = [self.visit(target.value), ast.Constant(target.attr)]
            helper = "_aug_attr_"
        elif isinstance(target, ast.Subscript):
            args = [self.visit(target.value), _slice_to_expr(self.visit(target.slice))]
            helper = "_aug_item_"
        else:
            return super().visit_AugAssign(node)
        call = ast.Call(
            func=ast.Name(helper, ast.Load()),
            args=[*args, ast.Constant(op), self.visit(node.value)],
            keywords=[],
        )
        new = ast.Expr(call)
        ast.copy_location(new, node)
        return ast.fix_missing_locations(new)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:
        if isinstance(node.target, ast.Name):
            return self.node_contents_visit(node)  # visit_Name checks the target; the annotation is visited
        if node.value is None:
            self.error(node, "annotations without a value are only allowed on plain names")
            return node
        assign = ast.Assign(targets=[node.target], value=node.value)
        ast.copy_location(assign, node)
        return self.visit(assign)


def _slice_to_expr(node: Any) -> Any:
    """``a[1:2] += x`` passes its slice to a helper: a Slice node must become a ``slice()`` call."""
    if isinstance(node, ast.Slice):
        parts = [p if p is not None else ast.Constant(None) for p in (node.lower, node.upper, node.step)]
        return ast.Call(func=ast.Name("slice", ast.Load()), args=parts, keywords=[])
    if isinstance(node, ast.Tuple):
        return ast.Tuple(elts=[_slice_to_expr(e) for e in node.elts], ctx=ast.Load())
    return node


def compile_script(source: str) -> types.CodeType:
    """Compile ``source`` under the policy, or raise ScriptCompileError with a message a model can use."""
    try:
        tree = ast.parse(source, SCRIPT_FILENAME, "exec")
    except SyntaxError as exc:
        text = f" at {exc.text.strip()!r}" if exc.text else ""
        raise ScriptCompileError("error", f"SyntaxError: {exc.msg} (line {exc.lineno}){text}") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ScriptCompileError("error", f"the script cannot be parsed: {type(exc).__name__}") from None
    try:
        result = compile_restricted_exec(tree, filename=SCRIPT_FILENAME, policy=ShadTransformer)
    except RecursionError:
        raise ScriptCompileError("error", "the script is nested too deeply to compile") from None
    if result.errors or result.code is None:
        raise ScriptCompileError("blocked", "; ".join(result.errors[:5]) or "the script was refused")
    return result.code


def script_line(tb: types.TracebackType | None) -> int | None:
    """The line of the script where an exception was raised (the deepest frame in the script)."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SCRIPT_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
