"""The restricted-Python policy and the façade modules, exercised in-process (fast, no sandbox process).

These test one layer on its own: the compile rules, the guards and the façades. The same attacks run
end to end, inside the real sandbox on both isolation paths, in test_codemode_sandbox.py.
"""

from __future__ import annotations

import types
from typing import Any

import pytest

from engine.codemode._client import ResultError, to_plain
from engine.codemode._facades import MAX_YAML_ALIASES, FacadeModule, build_modules
from engine.codemode._policy import (
    Guards,
    Recorder,
    SandboxLimit,
    SandboxViolation,
    ScriptCompileError,
    compile_script,
)
from engine.codemode._scope import ClassMaker, build_globals

try:
    from tests._codemode_fixtures import script_module
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from _codemode_fixtures import script_module  # type: ignore[no-redef]

__all__ = ["script_module"]  # a fixture, used by name


@pytest.fixture(autouse=True)
def _zygote_state(script_module: None) -> None:
    """Every policy test runs in the state the zygote sets up (``script_module``)."""


def run_here(source: str) -> tuple[Any, Recorder, str]:
    """Compile and run ``source`` under the policy in this process; return (__result__, recorder, prints)."""
    recorder = Recorder()
    printed: list[str] = []
    modules = build_modules(recorder.block)
    guards = Guards(recorder, modules, printed.append)
    namespace = build_globals(guards, ClassMaker(recorder, (FacadeModule,)), {})
    exec(compile_script(source), namespace)
    return namespace.get("__result__"), recorder, "".join(printed)


def violation(source: str) -> str:
    """The violation ``source`` causes at run time (and check it was recorded)."""
    recorder_box: list[Recorder] = []
    with pytest.raises(SandboxViolation) as info:
        recorder = Recorder()
        recorder_box.append(recorder)
        modules = build_modules(recorder.block)
        guards = Guards(recorder, modules, lambda text: None)
        namespace = build_globals(guards, ClassMaker(recorder, (FacadeModule,)), {})
        exec(compile_script(source), namespace)
    assert recorder_box[0].violations, "the violation was not recorded"
    return str(info.value)


def refused_at_compile(source: str) -> str:
    with pytest.raises(ScriptCompileError) as info:
        compile_script(source)
    assert info.value.kind == "blocked"
    return str(info.value)


# --- what the policy must allow (model-written code uses these constantly) --------------------------------


def test_result_name_and_augmented_assignment_on_items_and_attributes() -> None:
    result, recorder, _ = run_here(
        """
from collections import Counter, defaultdict
counts = Counter()
groups = defaultdict(list)
for word in "b a b c b".split():
    counts[word] += 1
    groups[word[0]] += [word]
class Tally:
    seen = 0
    def __init__(self):
        self.n = 0
    def add(self, k):
        self.n += k
        Tally.seen += 1
t = Tally()
t.add(2)
t.add(3)
d = {"x": 1}
d["x"] *= 10
lst = [1, 2, 3]
lst[0] -= 1
lst[1:2] += [7]
__result__ = {"counts": counts, "groups": groups, "n": t.n, "seen": Tally.seen, "d": d, "lst": lst}
"""
    )
    assert recorder.violations == []
    assert result["counts"] == {"b": 3, "a": 1, "c": 1}
    assert result["groups"] == {"b": ["b", "b", "b"], "a": ["a"], "c": ["c"]}
    assert (result["n"], result["seen"], result["d"], result["lst"]) == (5, 2, {"x": 10}, [0, 2, 7, 3])


def test_common_library_code_works() -> None:
    result, recorder, printed = run_here(
        """
import datetime, re, json, yaml, math, hashlib, itertools, functools, heapq, statistics
from dataclasses import dataclass, field, asdict
from enum import Enum
from typing import NamedTuple, Optional
from pathlib import Path

@dataclass
class Item:
    name: str
    score: float = 0.0
    tags: list = field(default_factory=list)

class Kind(Enum):
    NOTE = "note"
    REF = "ref"

class Pair(NamedTuple):
    a: int
    b: Optional[int] = None

items = sorted([Item("b", 2.0), Item("a", 3.5)], key=lambda i: (-i.score, i.name))
when = datetime.datetime.strptime("2026-03-14", "%Y-%m-%d")
print(f"{len(items)} items", "{0} and {1}".format("x", "y"))
__result__ = {
    "items": [asdict(i) for i in items],
    "kind": Kind("ref").name,
    "pair": list(Pair(1)),
    "date": when.date().isoformat(),
    "re": re.findall(r"#(\\w+)", "a #tag and #other"),
    "yaml": yaml.safe_load("a: [1, 2]\\nb: {c: d}"),
    "json": json.loads(json.dumps({"k": [1, 2]})),
    "path": [Path("Folder/Note.md").stem, Path("Folder/Note.md").parent.name],
    "misc": [math.floor(2.7), hashlib.sha1(b"x").hexdigest()[:6],
             list(itertools.islice(itertools.count(5), 2)),
             functools.reduce(lambda a, b: a * b, [1, 2, 3, 4]), heapq.nsmallest(1, [3, 1, 2]),
             statistics.median([3, 1, 2])],
}
"""
    )
    assert recorder.violations == []
    assert result["items"][0] == {"name": "a", "score": 3.5, "tags": []}
    assert result["kind"] == "REF" and result["pair"] == [1, None] and result["date"] == "2026-03-14"
    assert result["re"] == ["tag", "other"] and result["yaml"] == {"a": [1, 2], "b": {"c": "d"}}
    assert result["path"] == ["Note", "Folder"]
    assert result["misc"] == [2, "11f6ad", [5, 6], 24, [1], 2]
    assert printed == "2 items x and y\n"


# --- compile-time refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "x = ().__class__",
        "x = __import__('os')",
        "x = __builtins__",
        "def f(_getattr_, /):\n    return 1",  # guard shadowing through a positional-only parameter
        "def f(a, _write_=None, /):\n    return 1",
        "def f(*, _getiter_=None):\n    return 1",
        "f = lambda _getitem_=None, /: 1",
        "(_getattr_ := 1)",
        "for _getitem_ in []:\n    pass",
        "try:\n    pass\nexcept Exception as _write_:\n    pass",
        "import json as _getattr_",
        "from json import loads as _print_",
        "class _inplacevar_:\n    pass",
        "try:\n    pass\nexcept* ValueError:\n    pass",  # except* is refused outright
        "async def f():\n    pass",
        "class A(metaclass=type):\n    pass",
        "exec('1')",
        "x = breakpoint()",
        "import builtins",
        "eval('1')",
        "g = (i for i in [1])\nx = g.gi_frame",
        "def f():\n    yield 1\nx = f().gi_code",
        "x = 1\nx.f_globals",
        "from json import *",
        "self_x = 1\nobj = object()\nobj.__dict__ = {}",
        "d = {}\nd.__class__ += 1",
    ],
)
def test_compile_refuses(source: str) -> None:
    refused_at_compile(source)


def test_syntax_errors_are_ordinary_errors_with_a_line() -> None:
    with pytest.raises(ScriptCompileError) as info:
        compile_script("x = 1\nif x\n    pass\n")
    assert info.value.kind == "error"
    assert "line 2" in str(info.value)


def test_absurdly_nested_source_is_an_error_not_a_crash() -> None:
    with pytest.raises(ScriptCompileError) as info:
        compile_script("x = " + "(" * 5000 + "1" + ")" * 5000)
    assert info.value.kind == "error"


# --- run-time guards --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "x = getattr((), '__cla' + 'ss__')",
        "x = getattr(getattr, '__self__')",
        "g = (i for i in [1])\nx = getattr(g, 'gi_' + 'frame')",
        "g = (i for i in [1])\nx = getattr(g, 'gi_yieldfrom')",
        "try:\n    1/0\nexcept Exception as e:\n    x = getattr(e, '__traceback__')",
        "x = '{0.__class__}'.format(1)",
        "g = (i for i in [1])\nx = '{0.gi_frame}'.format(g)",
        "x = '{0[0].__class__.__mro__}'.format([1])",
        "f = str.format\nx = f('{0.__class__}', 1)",
        "x = '{a.__class__}'.format_map({'a': 1})",
        "x = type('X', (), {})",
        "class M(type):\n    pass",
        "import json\njson.loads = None",
        "import json\nsetattr(json, 'dumps', None)",
        "import json\ndel json.loads",
        "import collections\ncollections.Counter.most_common = lambda self: []",
        "import datetime\ndatetime.datetime.now = None",
        "import os",
        "import sys",
        "import subprocess",
        "import importlib",
        "import ctypes",
        "import socket",
        "import pickle",
        "import marshal",
        "import os.path",
        "from . import x",
        "import pathlib\nx = pathlib.os",
        "import json\nx = json.codecs",
        "import json\nx = json.decoder",
        "import datetime\nx = datetime.sys",
        "import enum\nx = enum.sys",
        "import dataclasses\nx = dataclasses.builtins",
        "import typing\nx = typing.get_type_hints",
        "import typing\nx = typing.sys",
        "import re\nx = re.enum",
        "import random\nx = random.Random",
        "import random\nx = random.SystemRandom",
        "import yaml\nx = yaml.load('a: 1')",
        "import yaml\nx = yaml.full_load('!!python/name:os.system')",
        "import yaml\nx = yaml.unsafe_load('a: 1')",
        "import yaml\nyaml.SafeLoader.add_constructor('!x', None)",
        "import yaml\nx = yaml.Loader",
        "import pathlib\nx = pathlib.Path('/etc/passwd').read_text()",
        "import pathlib\nx = pathlib.Path.home()",
        "x = open('/etc/passwd')",
        "f = eval\nx = f('1')",
        "x = compile('1', 'f', 'eval')",
        "x = globals()",
        "x = vars()",
        "x = memoryview(b'x')",
    ],
)
def test_runtime_guards_refuse(source: str) -> None:
    message = violation(source)
    assert "sandbox" in message or "not allowed" in message


def test_caught_violations_are_still_recorded() -> None:
    result, recorder, _ = run_here(
        """
try:
    import os
except BaseException:
    pass
try:
    x = getattr(1, '__class__')
except:
    pass
__result__ = "carried on"
"""
    )
    assert result == "carried on"
    assert len(recorder.violations) == 2
    assert "import of 'os'" in recorder.violations[0]


def test_safe_format_still_formats() -> None:
    result, recorder, _ = run_here(
        "__result__ = ['{0} {x:>3} {y[k]}'.format(1, x=2, y={'k': 'v'}), '{a}'.format_map({'a': 5}), "
        "str.format('{}-{}', 'a', 'b')]"
    )
    assert result == ["1   2 v", "5", "a-b"]
    assert recorder.violations == []


def test_one_argument_type_and_safe_dir() -> None:
    result, _, _ = run_here("import json\n__result__ = [type(1) is int, type('x') is str, dir(json)]")
    assert result[:2] == [True, True]
    assert result[2] == ["JSONDecodeError", "dumps", "loads"]


def test_hasattr_never_reveals_private_names() -> None:
    result, recorder, _ = run_here(
        "import yaml\n__result__ = [hasattr(1, '__class__'), hasattr('x', 'upper'), "
        "hasattr(yaml, 'CSafeLoader'), hasattr(yaml, 'safe_load')]"
    )
    assert result == [False, True, False, True]
    assert recorder.violations == []


def test_print_with_file_is_refused() -> None:
    with pytest.raises(TypeError):
        run_here("print('x', file=None or 1)")


def test_yaml_facade_caps_aliases_and_expansion() -> None:
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")
    )
    modules = build_modules(Recorder().block)
    yaml = modules["yaml"]
    import yaml as real_yaml

    with pytest.raises(real_yaml.YAMLError, match=r"alias|expands"):
        yaml.safe_load(laughs)
    many = "a: &a 1\nb: [" + ", ".join(["*a"] * (MAX_YAML_ALIASES + 1)) + "]\n"
    with pytest.raises(real_yaml.YAMLError, match="aliases"):
        yaml.safe_load(many)
    with pytest.raises(real_yaml.YAMLError):
        yaml.safe_load("!!python/object/apply:os.system ['echo pwned']")
    assert yaml.safe_load("a: &x 1\nb: *x") == {"a": 1, "b": 1}


def test_facades_are_read_only_and_expose_only_their_names() -> None:
    modules = build_modules(Recorder().block)
    json_facade = modules["json"]
    with pytest.raises(AttributeError):
        json_facade.loads = None
    with pytest.raises(SandboxViolation):
        json_facade.codecs  # noqa: B018
    with pytest.raises(AttributeError):
        json_facade.nonexistent  # noqa: B018
    assert isinstance(modules["collections"].abc, FacadeModule)
    assert all(not isinstance(getattr(m, n), types.ModuleType) for m in modules.values() for n in dir(m))


# --- the result -------------------------------------------------------------------------------------------


def test_result_conversion_refuses_live_objects_and_bombs() -> None:
    import datetime
    from collections import Counter

    assert to_plain(
        {"c": Counter("aab"), "t": (1, 2), "s": {2, 1}, "d": datetime.date(2026, 1, 2)}, 10_000
    ) == {
        "c": {"a": 2, "b": 1},
        "t": [1, 2],
        "s": [1, 2],
        "d": "2026-01-02",
    }
    with pytest.raises(ResultError) as info:
        to_plain({"f": len}, 10_000)
    assert info.value.kind == "error"
    shared: list[Any] = ["x" * 10]
    for _ in range(40):  # 2**40 strings if expanded: must stop at the budget, early
        shared = [shared, shared]
    with pytest.raises(ResultError) as info:
        to_plain(shared, 200_000)
    assert info.value.kind == "limited"
    deep: list[Any] = []
    for _ in range(70):
        deep = [deep]
    with pytest.raises(ResultError, match="nested"):
        to_plain(deep, 200_000)


def test_output_cap_is_a_limit() -> None:
    recorder = Recorder()
    from engine.codemode._child import _Output

    out = _Output(100, recorder)
    out.pending_bytes = 0
    out.write("x" * 60)
    with pytest.raises(SandboxLimit):
        out.write("y" * 60)
    assert recorder.limits and out.used == 100
