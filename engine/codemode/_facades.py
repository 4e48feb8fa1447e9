"""Façade modules: what ``import json`` (and the rest of the allow-list) gives a sandboxed script.

A script never receives a real module. Real modules re-export their own imports (``pathlib.os``,
``json.codecs``, ``datetime.sys``), and some helpers evaluate strings (``typing.get_type_hints``) or
build arbitrary objects (``yaml.load``). A façade is a read-only object that exposes only the names
listed here; asking for a real module's other names is recorded as a violation.
Loaded inside the sandbox child (standard library, RestrictedPython and PyYAML only).
"""

from __future__ import annotations
import __future__

import bisect
import collections
import collections.abc
import dataclasses
import datetime
import enum
import functools
import hashlib
import heapq
import importlib
import itertools
import json
import keyword
import math
import pathlib
import random
import re
import statistics
import string
import textwrap
import time
import typing
import unicodedata
from collections.abc import Callable
from typing import Any, NoReturn

import yaml

__all__ = ["MAX_YAML_ALIASES", "MAX_YAML_CHARS", "MAX_YAML_EXPANDED", "FacadeModule", "build_modules"]

MAX_YAML_ALIASES = 100
MAX_YAML_CHARS = 1_000_000
MAX_YAML_EXPANDED = 100_000


class FacadeModule:
    """A read-only stand-in for a module: only the allow-listed names, nothing to write."""

    __slots__ = ("_attrs", "_hidden", "_name", "_on_hidden")

    def __init__(
        self,
        name: str,
        attrs: dict[str, Any],
        hidden: frozenset[str] = frozenset(),
        on_hidden: Callable[[str], NoReturn] | None = None,
    ) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_attrs", dict(attrs))
        object.__setattr__(self, "_hidden", hidden)
        object.__setattr__(self, "_on_hidden", on_hidden)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):  # never the slots' own names: a half-built copy must not recurse
            raise AttributeError(attr)
        try:
            return self._attrs[attr]
        except KeyError:
            pass
        if attr in self._hidden and self._on_hidden is not None:
            self._on_hidden(f"{self._name}.{attr} is not available in the sandbox")
        raise AttributeError(
            f"module {self._name!r} in the sandbox has no attribute {attr!r} "
            f"(available: {', '.join(sorted(self._attrs))})"
        )

    def __setattr__(self, attr: str, value: Any) -> NoReturn:
        raise AttributeError(f"module {self._name!r} is read-only in the sandbox")

    def __delattr__(self, attr: str) -> NoReturn:
        raise AttributeError(f"module {self._name!r} is read-only in the sandbox")

    def __copy__(self) -> FacadeModule:
        return self

    def __deepcopy__(self, memo: Any) -> FacadeModule:
        return self

    def __reduce__(self) -> NoReturn:
        raise TypeError("sandbox modules cannot be pickled")

    def __dir__(self) -> list[str]:
        return sorted(self._attrs)

    def __repr__(self) -> str:
        return f"<sandbox module {self._name!r}>"


# --- yaml: safe loading only, with an alias cap ---------------------------------------------------------


class _CappedLoader(yaml.SafeLoader):
    """SafeLoader that refuses documents with more than MAX_YAML_ALIASES aliases (billion laughs)."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.alias_count = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.alias_count += 1
            if self.alias_count > MAX_YAML_ALIASES:
                raise yaml.YAMLError(f"YAML document has more than {MAX_YAML_ALIASES} aliases; refused")
        return super().compose_node(parent, index)


class _Expansion:
    """Counts the values a YAML node graph expands to when aliases are unfolded (memoised per node)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.sizes: dict[int, int] = {}
        self.active: set[int] = set()

    def size(self, node: Any) -> int:
        key = id(node)
        if key in self.sizes:
            return self.sizes[key]
        if key in self.active:
            raise yaml.YAMLError("recursive YAML structure (an alias inside its own anchor); refused")
        self.active.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(self.size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(self.size(k) + self.size(v) for k, v in node.value)
        self.active.discard(key)
        if total > self.cap:
            raise yaml.YAMLError(f"YAML expands to more than {self.cap} values (an alias bomb?); refused")
        self.sizes[key] = total
        return total


def _checked_document(loader: _CappedLoader) -> Any:
    node = loader.get_single_node()
    if node is None:
        return None
    _Expansion(MAX_YAML_EXPANDED).size(node)
    return loader.construct_document(node)


def _yaml_text(stream: Any) -> str:
    # Unbound methods: a script's str or bytes subclass could override decode or __len__ (the cap).
    if isinstance(stream, bytes):
        stream = bytes.decode(stream, "utf-8")
    if not isinstance(stream, str):
        raise TypeError("yaml.safe_load takes a str or bytes in the sandbox")
    text: str = str.__str__(stream)
    if len(text) > MAX_YAML_CHARS:
        raise ValueError(f"YAML text longer than {MAX_YAML_CHARS} characters; refused")
    return text


def _safe_load(stream: Any) -> Any:
    loader = _CappedLoader(_yaml_text(stream))
    try:
        return _checked_document(loader)
    finally:
        loader.dispose()


def _safe_load_all(stream: Any) -> list[Any]:
    loader = _CappedLoader(_yaml_text(stream))
    try:
        docs = []
        while loader.check_node():
            node = loader.get_node()
            _Expansion(MAX_YAML_EXPANDED).size(node)
            docs.append(loader.construct_document(node))
        return docs
    finally:
        loader.dispose()


def _safe_dump(data: Any, **kwargs: Any) -> Any:
    kwargs.pop("stream", None)
    return yaml.safe_dump(data, None, **kwargs)


# --- dataclasses: fields named like Python names only -----------------------------------------------------


def _check_field_names(cls: Any) -> None:
    """dataclasses writes each field name into generated source (``__init__``, ``__eq__``...) and execs
    it with real builtins. A class statement only produces identifiers; refuse anything else."""
    # Exactly what dataclasses reads (not inspect.get_annotations, which could differ).
    annotations = cls.__dict__.get("__annotations__", {}) if isinstance(cls, type) else {}  # noqa: RUF063
    for name in annotations:
        if type(name) is not str or not name.isidentifier() or keyword.iskeyword(name):
            raise TypeError(f"dataclass field names must be Python identifiers, not {name!r}")


def _dataclass(cls: Any = None, /, **kwargs: Any) -> Any:
    """``dataclasses.dataclass`` (bare or with options) that checks field names first."""

    def wrap(c: Any) -> Any:
        _check_field_names(c)
        return dataclasses.dataclass(c, **kwargs)

    return wrap if cls is None else wrap(cls)


# --- the table ------------------------------------------------------------------------------------------

_NAMES: dict[str, tuple[Any, str]] = {
    "json": (json, "loads dumps JSONDecodeError"),
    "re": (
        re,
        "compile search match fullmatch findall finditer sub subn split escape error Pattern Match "
        "IGNORECASE I MULTILINE M DOTALL S VERBOSE X ASCII A UNICODE U NOFLAG",
    ),
    "datetime": (datetime, "date datetime time timedelta timezone tzinfo MINYEAR MAXYEAR UTC"),
    "collections": (collections, "Counter defaultdict OrderedDict deque namedtuple ChainMap"),
    "collections.abc": (
        collections.abc,
        "Callable Collection Container Hashable Iterable Iterator Mapping MutableMapping "
        "MutableSequence MutableSet Sequence Set Sized",
    ),
    "itertools": (
        itertools,
        "accumulate chain combinations combinations_with_replacement compress count cycle dropwhile "
        "filterfalse groupby islice pairwise permutations product repeat starmap takewhile tee zip_longest",
    ),
    "functools": (functools, "reduce partial cmp_to_key lru_cache cache total_ordering cached_property"),
    "math": (math, " ".join(n for n in dir(math) if not n.startswith("_"))),
    "hashlib": (
        hashlib,
        "md5 sha1 sha224 sha256 sha384 sha512 blake2b blake2s sha3_256 sha3_512 new",
    ),
    "typing": (
        typing,
        "Any Callable ClassVar Counter DefaultDict Dict Final FrozenSet Generic Iterable Iterator List "
        "Literal Mapping NamedTuple Optional Sequence Set Tuple TypeVar Union cast TYPE_CHECKING",
    ),
    "dataclasses": (
        dataclasses,
        "dataclass field fields asdict astuple replace is_dataclass FrozenInstanceError",
    ),
    "enum": (enum, "Enum IntEnum Flag IntFlag StrEnum auto unique"),
    "heapq": (heapq, "heappush heappop heapify heapreplace heappushpop nlargest nsmallest merge"),
    "bisect": (bisect, "bisect bisect_left bisect_right insort insort_left insort_right"),
    "statistics": (
        statistics,
        "mean fmean geometric_mean harmonic_mean median median_low median_high median_grouped mode "
        "multimode pstdev pvariance stdev variance quantiles StatisticsError",
    ),
    "textwrap": (textwrap, "wrap fill shorten dedent indent"),
    "string": (
        string,
        "ascii_letters ascii_lowercase ascii_uppercase digits hexdigits octdigits punctuation "
        "printable whitespace capwords",
    ),
    "unicodedata": (
        unicodedata,
        "normalize category name lookup combining east_asian_width decimal digit numeric",
    ),
    "random": (
        random,
        "random randint randrange choice choices sample shuffle uniform gauss seed",
    ),
    "time": (time, "time monotonic perf_counter sleep"),
    "__future__": (__future__, "annotations"),
}


def _hidden_names(real: Any, attrs: dict[str, Any]) -> frozenset[str]:
    """The real module's other public names: asking a façade for one is a violation. Private and dunder
    names are left out (scripts cannot spell them; trusted code probing ``__name__`` just gets an
    AttributeError)."""
    return frozenset(n for n in dir(real) if n not in attrs and not n.startswith("_"))


def build_modules(on_hidden: Callable[[str], NoReturn]) -> dict[str, Any]:
    """Façades for every allowed module name (``collections.abc`` also hangs off ``collections``)."""
    modules: dict[str, Any] = {}
    for name, (real, names) in _NAMES.items():
        attrs = {n: getattr(real, n) for n in names.split() if hasattr(real, n)}
        hidden = _hidden_names(real, attrs)
        modules[name] = (real, attrs, hidden)
    yaml_attrs: dict[str, Any] = {
        "safe_load": _safe_load,
        "safe_load_all": _safe_load_all,
        "safe_dump": _safe_dump,
        "dump": _safe_dump,
        "YAMLError": yaml.YAMLError,
    }
    modules["yaml"] = (yaml, yaml_attrs, _hidden_names(yaml, yaml_attrs))
    path_attrs = {
        "PurePath": pathlib.PurePath,
        "PurePosixPath": pathlib.PurePosixPath,
        "PureWindowsPath": pathlib.PureWindowsPath,
        "Path": pathlib.PurePosixPath,  # pure only: no file access behind it
    }
    modules["pathlib"] = (pathlib, path_attrs, _hidden_names(pathlib, path_attrs))
    dc = modules["dataclasses"]
    modules["dataclasses"] = (dc[0], {**dc[1], "dataclass": _dataclass}, dc[2])

    def hidden_refusal(message: str) -> NoReturn:
        if message.startswith("yaml."):
            message += "; use yaml.safe_load / yaml.safe_dump"
        on_hidden(message)

    out: dict[str, Any] = {
        name: FacadeModule(name, attrs, hidden, hidden_refusal)
        for name, (_, attrs, hidden) in modules.items()
    }
    abc = out["collections.abc"]
    coll = modules["collections"]
    out["collections"] = FacadeModule(
        "collections", {**coll[1], "abc": abc}, coll[2] - {"abc"}, hidden_refusal
    )
    return out


def warm_up() -> None:
    """Touch what loads lazily (so nothing needs a file once seccomp forbids opening files)."""
    importlib.import_module("_strptime")
    import encodings.ascii
    import encodings.cp1252
    import encodings.latin_1
    import encodings.utf_8_sig
    import encodings.utf_16
    import encodings.utf_32  # noqa: F401

    datetime.datetime.strptime("2026-01-02", "%Y-%m-%d")
    time.strftime("%Y-%m-%d %Z")
    for algo in ("md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake2b", "blake2s", "sha3_256"):
        hashlib.new(algo, b"x").hexdigest()
    re.compile(r"(?i)\w+\s*\d").findall("warm 1")
    _safe_load("a: [1, 2]\nb: {c: d}\n")
    _safe_dump({"a": [1, 2]})
    json.loads(json.dumps({"a": [1.5, None, True]}))
    statistics.median([1, 2, 3])
    unicodedata.normalize("NFKD", "é")
    "é".encode("cp1252")
