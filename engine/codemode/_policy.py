"""The restricted-Python policy of Code Mode: compile rules, guards and the builtins a script sees.

Loaded inside the sandbox child (standard library and RestrictedPython only). It is one layer of
several: the process boundary, rlimits and seccomp hold even if a guard here were bypassed.
"""

from __future__ import annotations

import _string  # type: ignore[import-not-found]
import abc
import ast
import builtins
import operator
import string
import types
from collections import ChainMap, deque
from collections.abc import Callable, Iterator
from pathlib import PurePath
from typing import Any, NoReturn

from RestrictedPython.compile import compile_restricted_exec
from RestrictedPython.transformer import ALLOWED_FUNC_NAMES, INSPECT_ATTRIBUTES, RestrictingNodeTransformer

from ._facades import FacadeModule

__all__ = [
    "SCRIPT_MODULE",
    "Guards",
    "Recorder",
    "SandboxLimit",
    "SandboxViolation",
    "ScriptCompileError",
    "compile_script",
]

SCRIPT_MODULE = "__script__"
SCRIPT_FILENAME = "<script>"
RESULT_NAME = "__result__"
MAX_MESSAGE = 500  # a recorded violation or limit (the script controls parts of some messages)
MAX_NOTIFIED = 20  # violations (and limits) reported to the parent as they happen

# Dunder methods a script may define on its own classes (called by the interpreter, never reachable by name).
EXTRA_MAGIC = frozenset({"__repr__", "__str__", "__len__", "__hash__", "__bool__", "__post_init__"})
# ``super().__init__(...)`` and its kind: the dunder methods a script's class may define, reached on super().
SUPER_METHODS = frozenset(ALLOWED_FUNC_NAMES) | EXTRA_MAGIC
DENIED_ATTRS = frozenset(INSPECT_ATTRIBUTES) | {"mro", "f_lineno", "tb_lasti", "tb_lineno", "f_lasti"}
DANGEROUS_VALUES = (types.ModuleType, types.FrameType, types.CodeType, types.TracebackType)
_SUSPECT_VALUES = (*DANGEROUS_VALUES, type)  # what a guard looks at twice: metaclasses are types
# Builtin containers a script may modify, and ChainMap, checked by exact ancestry (it is an ABC:
# ``isinstance`` would believe ``ChainMap.register(AnyClass)``).
WRITABLE_BUILTINS = (dict, list, set, bytearray, deque)
PATH_IO = frozenset(
    "read_text read_bytes write_text write_bytes open exists is_file is_dir iterdir glob rglob stat lstat "
    "resolve absolute touch mkdir rmdir unlink rename replace home cwd expanduser samefile owner group "
    "chmod symlink_to hardlink_to readlink is_symlink".split()
)
INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "<<=": operator.ilshift,
    ">>=": operator.irshift, "|=": operator.ior, "^=": operator.ixor, "&=": operator.iand,
    "@=": operator.imatmul,
}  # fmt: skip
AUG_OPS = {
    ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/=", ast.FloorDiv: "//=", ast.Mod: "%=",
    ast.Pow: "**=", ast.LShift: "<<=", ast.RShift: ">>=", ast.BitOr: "|=", ast.BitXor: "^=",
    ast.BitAnd: "&=", ast.MatMult: "@=",
}  # fmt: skip


class SandboxViolation(BaseException):
    """A policy violation. A BaseException so ``except Exception`` does not swallow it; it is recorded
    before it is raised, so catching it does not hide it either."""


class SandboxLimit(BaseException):
    """A resource limit was reached (output, result size, broker budget)."""


class ScriptCompileError(Exception):
    """The script does not compile: ``kind`` is "error" (syntax) or "blocked" (policy)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Unique:
    """Trusted helpers a script can hold a reference to (bound guards, the recorder): copying one
    (``dataclasses.asdict`` deep-copies field values) gives the object itself, never a twin whose
    recorder the run would not see."""

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: Any) -> Any:
        return self

    def __reduce__(self) -> NoReturn:
        raise TypeError("sandbox internals cannot be pickled")


class Recorder(_Unique):
    """Every violation and limit hit during one script, kept even when the script catches them.
    ``notify`` (the sandbox child's) tells the trusted parent at once, so a run that is later killed or
    crashes is still reported as blocked."""

    def __init__(self, notify: Callable[[str, str], None] | None = None) -> None:
        self.violations: list[str] = []
        self.limits: list[str] = []
        self.notify = notify

    def _note(self, kind: str, into: list[str], message: str) -> str:
        message = message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."
        into.append(message)
        if self.notify is not None and len(into) <= MAX_NOTIFIED:
            self.notify(kind, message)
        return message

    def block(self, message: str) -> NoReturn:
        raise SandboxViolation(self._note("blocked", self.violations, message))

    def limit(self, message: str) -> NoReturn:
        raise SandboxLimit(self._note("limited", self.limits, message))


# --- compile -------------------------------------------------------------------------------------------


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


# --- guards --------------------------------------------------------------------------------------------


class _SafeFormatter(string.Formatter):
    """``str.format`` whose field lookups (``{0.attr}``, ``{0[key]}``) go through the guards."""

    def __init__(self, guards: Guards) -> None:
        self._guards = guards

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        first, rest = _string.formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attr, key in rest:
            obj = self._guards.getattr(obj, key) if is_attr else self._guards.getitem(obj, key)
        return obj, first


class _PrintCollector:
    """What RestrictedPython's ``print`` calls: writes to the shared, capped output sink."""

    def __init__(self, sink: Callable[[str], None]) -> None:
        self._sink = sink
        self._text: list[str] = []

    def _call_print(
        self, *objects: Any, sep: Any = " ", end: Any = "\n", file: Any = None, flush: Any = False
    ) -> None:
        if file is not None:
            raise TypeError("print(file=...) is not available in the sandbox; print to the default output")
        text = (" " if sep is None else str(sep)).join(str(o) for o in objects) + (
            "\n" if end is None else str(end)
        )
        self._sink(text)
        self._text.append(text)

    def __call__(self) -> str:
        return "".join(self._text)


def _plain_name(name: Any) -> str:
    """An attribute name as a plain ``str``. A script's ``str`` subclass can override ``startswith``,
    ``__eq__`` and ``__hash__`` and so lie to every check below, while ``getattr`` still looks up its
    real text: the checks and the lookup must see the same, plain string."""
    if type(name) is str:
        return name
    if not isinstance(name, str):
        raise TypeError("attribute name must be a string")
    return str.__str__(name)  # a copy of the characters, as an exact str


class Guards(_Unique):
    """The functions RestrictedPython's compiled code calls, bound to one script's recorder."""

    def __init__(self, recorder: Recorder, modules: dict[str, Any], sink: Callable[[str], None]) -> None:
        self.recorder = recorder
        self.modules = modules
        self.sink = sink
        self.formatter = _SafeFormatter(self)
        # The script's ``type``: one object, so that ``type(int) is type`` holds (see ``type`` below).
        self.type_builtin = self.type

    def _refuse_value(self, value: Any) -> None:
        if isinstance(value, DANGEROUS_VALUES):
            self.recorder.block(f"{type(value).__name__} objects are not accessible in the sandbox")
        if isinstance(value, type) and issubclass(value, type):
            self.recorder.block(
                "metaclasses are not accessible in the sandbox (calling one would define a class "
                "outside the policy); define classes with `class`"
            )

    # reads
    def getattr(self, obj: Any, name: Any, *default: Any) -> Any:
        name = _plain_name(name)
        if name.startswith("_") or name in DENIED_ATTRS:
            self.recorder.block(f"access to attribute {name!r} is not allowed in the sandbox")
        if isinstance(obj, DANGEROUS_VALUES):
            self.recorder.block(f"{type(obj).__name__} objects are not accessible in the sandbox")
        # ``super(S, s).format`` is str.format itself: a super object is judged by what it is bound to.
        bound = builtins.getattr(obj, "__self__", None) if isinstance(obj, super) else None
        subject = obj if bound is None else bound
        if name in ("format", "format_map") and (
            isinstance(subject, str) or (isinstance(subject, type) and issubclass(subject, str))
        ):
            return self._format_method(subject, name)
        if name in PATH_IO and (
            isinstance(subject, PurePath) or (isinstance(subject, type) and issubclass(subject, PurePath))
        ):
            self.recorder.block(
                f"pathlib in the sandbox has pure paths only (no file access): .{name}() is not available; "
                "read notes with obsidian.read_note(path) and list them with obsidian.list_notes(folder)"
            )
        try:
            value = getattr(obj, name)
        except AttributeError:
            if default:
                return default[0]
            raise
        self._refuse_value(value)
        if name == "register" and getattr(value, "__func__", None) is abc.ABCMeta.register:
            owner = value.__self__
            if not self.writable(owner):  # a library ABC: registering would change isinstance for all
                self.recorder.block(f"cannot register classes with {owner.__name__!r} in the sandbox")
        return value

    def _format_method(self, obj: Any, name: str) -> Callable[..., str]:
        fmt = self.formatter
        if isinstance(obj, str):
            if name == "format":
                return lambda *args, **kwargs: fmt.vformat(obj, args, kwargs)
            return lambda mapping: fmt.vformat(obj, (), mapping)
        if name == "format":
            return lambda template, *args, **kwargs: fmt.vformat(str(template), args, kwargs)
        return lambda template, mapping: fmt.vformat(str(template), (), mapping)

    def getitem(self, obj: Any, key: Any) -> Any:
        if isinstance(obj, DANGEROUS_VALUES):
            self.recorder.block(f"{type(obj).__name__} objects are not accessible in the sandbox")
        value = obj[key]
        if isinstance(value, _SUSPECT_VALUES):
            self._refuse_value(value)
        return value

    def getiter(self, obj: Any) -> Iterator[Any]:
        if isinstance(obj, DANGEROUS_VALUES):
            self.recorder.block(f"{type(obj).__name__} objects are not accessible in the sandbox")
        return iter(obj)

    def hasattr(self, obj: Any, name: Any) -> bool:
        name = _plain_name(name)
        if name.startswith("_") or name in DENIED_ATTRS:
            return False
        if isinstance(obj, FacadeModule) and name not in builtins.dir(obj):
            return False  # probing a module for an optional name is common and harmless
        try:
            self.getattr(obj, name)
        except AttributeError:
            return False
        return True

    def dir(self, *args: Any) -> list[str]:
        if len(args) != 1:
            raise TypeError("dir() needs exactly one argument in the sandbox")
        return [n for n in builtins.dir(args[0]) if not n.startswith("_") and n not in DENIED_ATTRS]

    # writes
    @staticmethod
    def writable(obj: Any) -> bool:
        if isinstance(obj, type):
            return obj.__dict__.get("__module__") == SCRIPT_MODULE
        cls = type(obj)
        return (
            isinstance(obj, WRITABLE_BUILTINS) or cls.__module__ == SCRIPT_MODULE or ChainMap in cls.__mro__
        )

    def write(self, obj: Any) -> Any:
        if not self.writable(obj):
            what = obj.__name__ if isinstance(obj, type) else type(obj).__name__
            self.recorder.block(
                f"cannot modify {what!r} objects in the sandbox "
                "(only your own classes, dicts, lists and sets)"
            )
        return obj

    def _check_name(self, name: Any) -> str:
        text = _plain_name(name)
        if text.startswith("_") or text in DENIED_ATTRS:
            self.recorder.block(f"setting attribute {text!r} is not allowed in the sandbox")
        return text

    def setattr(self, obj: Any, name: Any, value: Any) -> None:
        builtins.setattr(self.write(obj), self._check_name(name), value)

    def delattr(self, obj: Any, name: Any) -> None:
        builtins.delattr(self.write(obj), self._check_name(name))

    def inplacevar(self, op: str, x: Any, y: Any) -> Any:
        fn = INPLACE.get(op)
        if fn is None:
            self.recorder.block(f"unsupported operator {op!r}")
        return fn(x, y)

    def aug_item(self, obj: Any, key: Any, op: str, value: Any) -> None:
        target = self.write(obj)
        target[key] = self.inplacevar(op, self.getitem(target, key), value)

    def aug_attr(self, obj: Any, name: str, op: str, value: Any) -> None:
        target = self.write(obj)
        builtins.setattr(
            target, self._check_name(name), self.inplacevar(op, self.getattr(target, name), value)
        )

    def super_attr(self, sup: Any, name: str) -> Any:
        """``super().__init__`` (and the other dunders a script class may define), for the script's own
        classes only: a real super object bound to an instance (or class) the script defined."""
        bound = builtins.getattr(sup, "__self__", None) if isinstance(sup, super) else None
        if name not in SUPER_METHODS or bound is None or not self.writable(bound):
            self.recorder.block(f"super().{name} is only available inside your own classes in the sandbox")
        return builtins.getattr(sup, name)

    # builtins that need care
    def type(self, *args: Any) -> Any:
        if len(args) != 1:
            self.recorder.block("type() takes one argument in the sandbox; define classes with `class`")
        cls = builtins.type(args[0])
        if issubclass(cls, builtins.type):
            # The type of a class is a metaclass (``type`` itself, ABCMeta, EnumType): calling one with
            # three arguments defines a class outside the policy (any dunder, any annotation, which
            # dataclasses turns into generated source). The script gets its own one-argument ``type``.
            return self.type_builtin
        return cls

    def import_(
        self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        if level:
            self.recorder.block("relative imports are not allowed in the sandbox")
        key = name if fromlist else name.partition(".")[0]
        if name not in self.modules or key not in self.modules:
            allowed = ", ".join(sorted(m for m in self.modules if not m.startswith("_") and "." not in m))
            self.recorder.block(
                f"import of {name!r} is not allowed in the sandbox; available modules: {allowed}; "
                "the vault is reached through the `obsidian` object"
            )
        return self.modules[key]

    def stub(self, name: str, hint: str) -> Callable[..., NoReturn]:
        def refuse(*args: Any, **kwargs: Any) -> NoReturn:
            self.recorder.block(f"{name}() is not available in the sandbox: {hint}")

        refuse.__name__ = name
        return refuse

    def make_print(self, _getattr: Any = None) -> _PrintCollector:
        return _PrintCollector(self.sink)


def script_line(tb: types.TracebackType | None) -> int | None:
    """The line of the script where an exception was raised (the deepest frame in the script)."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SCRIPT_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
