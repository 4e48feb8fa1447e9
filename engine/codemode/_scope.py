"""The namespace a sandboxed script runs in: safe builtins, clear stubs for the forbidden ones, the
guard functions RestrictedPython's compiled code calls, and the class factory every ``class`` goes through.

Loaded inside the sandbox child (standard library and RestrictedPython only).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence

from ._policy import SCRIPT_MODULE, Guards, Recorder

__all__ = ["SAFE_BUILTIN_NAMES", "STUBS", "ClassMaker", "build_globals"]


class ClassMaker:
    """RestrictedPython compiles every ``class`` with ``metaclass=__metaclass__``: this picks the real
    metaclass from the bases (so Enum, NamedTuple and dataclasses work) and refuses metaclass tricks."""

    def __init__(self, recorder: Recorder, forbidden: tuple[type, ...]) -> None:
        self.recorder = recorder
        self.forbidden = forbidden

    def _meta(self, name: str, bases: tuple[Any, ...]) -> Any:
        for base in bases:
            if not isinstance(base, type):
                what = (
                    "metaclasses are not allowed"
                    if getattr(base, "__name__", "") == "type"
                    else (f"its base is a {type(base).__name__}, not a class")
                )
                self.recorder.block(f"class {name}: {what} in the sandbox")
            if issubclass(base, type):
                self.recorder.block(f"class {name}: metaclasses are not allowed in the sandbox")
            if issubclass(base, self.forbidden):
                self.recorder.block(f"class {name}: cannot subclass {base.__name__} in the sandbox")
        meta: Any = type
        for base in bases:
            base_meta = type(base)
            if issubclass(base_meta, meta):
                meta = base_meta
            elif not issubclass(meta, base_meta):
                raise TypeError(f"class {name}: metaclass conflict between its bases")
        return meta

    def __prepare__(self, name: str, bases: tuple[Any, ...], **kwargs: Any) -> Any:
        return self._meta(name, bases).__prepare__(name, bases, **kwargs)

    def __call__(self, name: str, bases: tuple[Any, ...], namespace: Any, **kwargs: Any) -> Any:
        return self._meta(name, bases)(name, bases, namespace, **kwargs)


SAFE_BUILTIN_NAMES = (
    "abs all any ascii bin bool bytearray bytes callable chr classmethod complex dict divmod enumerate "
    "filter float format frozenset hash hex id int isinstance issubclass iter len list map max min next "
    "object oct ord pow property range repr reversed round set slice sorted staticmethod str sum super "
    "tuple zip True False None NotImplemented Ellipsis "
    "ArithmeticError AssertionError AttributeError BaseException EOFError Exception ImportError IndexError "
    "KeyError LookupError ModuleNotFoundError NameError NotImplementedError OverflowError RecursionError "
    "RuntimeError StopIteration TimeoutError TypeError UnicodeDecodeError UnicodeEncodeError UnicodeError "
    "ValueError ZeroDivisionError"
).split()
STUBS = {
    "eval": "evaluating strings as code is not allowed",
    "exec": "executing strings as code is not allowed",
    "compile": "compiling code is not allowed",
    "open": "there is no file access; use obsidian.read_note(path)",
    "input": "scripts cannot read input",
    "globals": "namespaces cannot be inspected",
    "locals": "namespaces cannot be inspected",
    "vars": "namespaces cannot be inspected; use getattr(obj, name)",
    "breakpoint": "no debugger in the sandbox",
    "help": "no interactive help in the sandbox",
    "exit": "set __result__ and let the script end",
    "quit": "set __result__ and let the script end",
    "memoryview": "memoryview is not available",
}


def build_globals(guards: Guards, maker: ClassMaker, extra: dict[str, Any]) -> dict[str, Any]:
    """The namespace a script runs in: safe builtins, the guards RestrictedPython calls, ``extra``."""
    safe: dict[str, Any] = {name: getattr(builtins, name) for name in SAFE_BUILTIN_NAMES}
    safe.update({name: guards.stub(name, hint) for name, hint in STUBS.items()})
    safe.update(
        getattr=guards.getattr,
        hasattr=guards.hasattr,
        setattr=guards.setattr,
        delattr=guards.delattr,
        dir=guards.dir,
        type=guards.type_builtin,
        __import__=guards.import_,
        __build_class__=builtins.__build_class__,
    )
    namespace: dict[str, Any] = {
        "__builtins__": safe,
        "__name__": SCRIPT_MODULE,
        "__metaclass__": maker,
        "_getattr_": guards.getattr,
        "_getitem_": guards.getitem,
        "_getiter_": guards.getiter,
        "_write_": guards.write,
        "_print_": guards.make_print,
        "_inplacevar_": guards.inplacevar,
        "_aug_item_": guards.aug_item,
        "_aug_attr_": guards.aug_attr,
        "_super_attr_": guards.super_attr,
        "_apply_": _apply,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
    }
    namespace.update(extra)
    return namespace


def _apply(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)
