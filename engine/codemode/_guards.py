"""The run-time guards of the policy: the functions RestrictedPython's compiled code calls for every
attribute, item, write and import, bound to one script's recorder. Loaded inside the sandbox."""

from __future__ import annotations

import _string  # type: ignore[import-not-found]
import abc
import builtins
import operator
import string
import types
from collections import ChainMap, deque
from collections.abc import Callable, Iterator
from pathlib import PurePath
from typing import Any, NoReturn

from ._compile import DENIED_ATTRS, SUPER_METHODS
from ._facades import FacadeModule
from ._recorder import Recorder, Unique

__all__ = ["DANGEROUS_VALUES", "SCRIPT_MODULE", "Guards"]

SCRIPT_MODULE = "__script__"
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


class Guards(Unique):
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
