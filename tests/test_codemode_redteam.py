"""Escapes found by a red-team pass over the Code Mode sandbox, one test each (each failed before its fix).

In-process tests exercise the policy layer on its own (fast); the end-to-end ones run inside the real
sandbox on both isolation paths; the broker ones feed requests to the trusted parent directly.
"""

from __future__ import annotations

import abc
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

from engine.codemode import Sandbox
from engine.codemode._broker import Broker, FsRoot
from engine.codemode._facades import FacadeModule, build_modules
from engine.codemode._policy import Guards, Recorder, SandboxViolation, ScriptCompileError, compile_script
from engine.codemode._scope import ClassMaker, build_globals
from engine.codemode._wire import decode, encode
from engine.vault import Vault, VaultSet

try:
    from tests._codemode_fixtures import (
        codemode_env,
        codemode_home,
        copy_demo,
        run_refused,
        sandbox,
        script_module,
    )
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from _codemode_fixtures import (  # type: ignore[no-redef]
        codemode_env,
        codemode_home,
        copy_demo,
        run_refused,
        sandbox,
        script_module,
    )

__all__ = ["codemode_env", "codemode_home", "sandbox", "script_module"]  # fixtures used by name


def src(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


def run_here(source: str) -> tuple[Any, Recorder]:
    """Compile and run ``source`` under the policy in this process; violations propagate."""
    recorder = Recorder()
    guards = Guards(recorder, build_modules(recorder.block), lambda text: None)
    namespace = build_globals(guards, ClassMaker(recorder, (FacadeModule,)), {})
    exec(compile_script(src(source)), namespace)
    return namespace.get("__result__"), recorder


def violation(source: str) -> str:
    recorder = Recorder()
    with pytest.raises(SandboxViolation) as info:
        guards = Guards(recorder, build_modules(recorder.block), lambda text: None)
        namespace = build_globals(guards, ClassMaker(recorder, (FacadeModule,)), {})
        exec(compile_script(src(source)), namespace)
    assert recorder.violations, "the violation was not recorded"
    return str(info.value)


# --- the policy layer ---------------------------------------------------------------------------------------


@pytest.mark.usefixtures("script_module")
@pytest.mark.parametrize(
    "source",
    [
        # type(type(x)) was the real ``type``: three-argument type() outside the class factory
        "T = type(type(1))\nX = T('X', (), {'__init_subclass__': 1})",
        "import collections.abc\nM = type(collections.abc.Mapping)\nX = M('X', (), {})",
        "import enum\nM = type(enum.Enum)\nX = M('X', (), {})",
        # a str subclass lied to the guards' own checks (startswith / __eq__ / __hash__)
        """
        class N(str):
            def startswith(self, *a):
                return False
        x = getattr(1, N('__class__'))
        """,
        """
        class N(str):
            def startswith(self, *a):
                return False
            def __eq__(self, other):
                return False
            def __hash__(self):
                return 1
        g = (i for i in [1])
        x = getattr(g, N('gi_frame'))
        """,
        """
        class N(str):
            def startswith(self, *a):
                return False
        class C:
            pass
        setattr(C, N('__init_subclass__'), 1)
        """,
        # super(S, s).format is the real str.format: attribute traversal in the template
        "class S(str):\n    pass\nx = super(S, S('{0.__class__.__mro__}')).format(1)",
        "class S(str):\n    pass\nx = super(S, S).format('{0.__class__}', 1)",
        "class S(str):\n    pass\nx = super(S, S('{a.__class__}')).format_map({'a': 1})",
        # ChainMap is an ABC: registering a class made its instances "writable dicts"
        "import collections\ncollections.ChainMap.register(ValueError)",
        "import collections.abc\ncollections.abc.Mapping.register(int)",
        "import typing\ntyping.Sequence.register(int)",
        # super().__init__ is allowed inside a script's own classes only
        "def super():\n    return 1\nclass A:\n    def f(self):\n        return super().__init__\nA().f()",
    ],
)
def test_policy_bypasses_are_blocked(source: str) -> None:
    assert "sandbox" in violation(source)


@pytest.mark.usefixtures("script_module")
def test_the_script_type_is_one_argument_only_even_for_classes() -> None:
    result, recorder = run_here(
        "__result__ = [type(int) is type, type(type(1)) is type, type(1) is int, type('x') == str]"
    )
    assert result == [True, True, True, True] and recorder.violations == []


@pytest.mark.usefixtures("script_module")
def test_copies_of_the_guards_report_to_the_same_recorder() -> None:
    """dataclasses.asdict deep-copies field values: a copied guard must not carry a private recorder
    that swallows the violations it records."""
    recorder = Recorder()
    guards = Guards(recorder, build_modules(recorder.block), lambda text: None)
    namespace = build_globals(guards, ClassMaker(recorder, (FacadeModule,)), {})
    source = """
    import dataclasses
    @dataclasses.dataclass
    class D:
        f: object
    g = dataclasses.asdict(D(getattr))['f']
    try:
        g(1, '__class__')
    except BaseException:
        pass
    __result__ = 'carried on'
    """
    exec(compile_script(src(source)), namespace)
    assert namespace["__result__"] == "carried on"
    assert recorder.violations and "__class__" in recorder.violations[0]


def test_dataclass_refuses_field_names_that_are_not_identifiers() -> None:
    """dataclasses writes field names into the source it execs with real builtins (``__eq__`` here)."""
    modules = build_modules(Recorder().block)
    bad = type("X", (), {"__annotations__": {"x,print('zqxpwned'),self.x": int}})
    with pytest.raises(TypeError, match="identifiers"):
        modules["dataclasses"].dataclass(bad, init=False)
    with pytest.raises(TypeError, match="identifiers"):
        modules["dataclasses"].dataclass(init=False)(bad)
    ok = modules["dataclasses"].dataclass(type("Y", (), {"__annotations__": {"a": int}, "a": 1}))
    assert ok().a == 1


def test_guards_refuse_modules_and_metaclasses_from_subscripts() -> None:
    recorder = Recorder()
    guards = Guards(recorder, {}, lambda text: None)
    for bad in (types.ModuleType("os"), type, abc.ABCMeta):
        with pytest.raises(SandboxViolation):
            guards.getitem([bad], 0)
    assert guards.getitem({"k": int}, "k") is int  # ordinary classes are fine
    assert len(recorder.violations) == 3


def test_yaml_takes_the_text_of_a_bytes_or_str_subclass() -> None:
    yaml = build_modules(Recorder().block)["yaml"]

    class B(bytes):
        def decode(self, *args: Any) -> str:  # type: ignore[override]
            return "a: 1"

    class S(str):
        def __len__(self) -> int:
            return 0

    assert yaml.safe_load(B(b"x: 2")) == {"x": 2}
    with pytest.raises(ValueError, match="longer than"):
        yaml.safe_load(S("a: " + "x" * 1_000_001))


@pytest.mark.usefixtures("script_module")
def test_super_init_works_in_a_scripts_own_classes() -> None:
    result, recorder = run_here(
        """
        class Base:
            def __init__(self, name):
                self.name = name
            def __repr__(self):
                return "Base"
        class Child(Base):
            def __init__(self, name):
                super().__init__(name.upper())
                self.n = 0
            def __repr__(self):
                return "Child<" + super().__repr__() + ">"
        class Oops(Exception):
            def __init__(self, what):
                super().__init__("oops: " + what)
        try:
            raise Oops("x")
        except Oops as e:
            msg = str(e)
        c = Child("a")
        c.n += 1
        __result__ = [c.name, c.n, repr(c), msg]
        """
    )
    assert result == ["A", 1, "Child<Base>", "oops: x"] and recorder.violations == []
    with pytest.raises(ScriptCompileError):  # only the zero-argument form is rewritten
        compile_script("x = super(int, 1).__init__")


# --- end to end ---------------------------------------------------------------------------------------------


def test_dataclass_codegen_escape_is_blocked(sandbox: Sandbox) -> None:
    """type(type(1)) gave the real ``type``; a class with a crafted annotation made dataclasses generate
    ``__eq__`` source that ran with real builtins (os.getuid, open('/etc/passwd') without seccomp)."""
    script = src(
        """
        T = type(type(1))
        import dataclasses
        name = "x,self.x.append(__import__('os').getuid()),self.x"
        X = dataclasses.dataclass(T('X', (), {'__annotations__': {name: int}}), init=False)
        a = X()
        a.x = []
        a == a
        __result__ = a.x
        """
    )
    err = run_refused(sandbox, script, "blocked")
    assert "type()" in err.message


def test_str_subclass_escape_is_blocked(sandbox: Sandbox) -> None:
    """A str subclass whose startswith says no reached object.__subclasses__ and os through
    ``os._wrap_close.__init__.__globals__``."""
    script = src(
        """
        class N(str):
            def startswith(self, *a):
                return False
        c = getattr(getattr(getattr(1, N('__class__')), N('__base__')), N('__subclasses__'))()
        w = [k for k in c if getattr(k, N('__name__')) == '_wrap_close'][0]
        g = getattr(getattr(w, N('__init__')), N('__globals__'))
        __result__ = g['getuid']()
        """
    )
    err = run_refused(sandbox, script, "blocked")
    assert "__class__" in err.message


@pytest.mark.parametrize(
    "script",
    [
        # a violation inside code that runs while __result__ is converted (sorting a set)
        """
        class S(str):
            def __lt__(self, other):
                try:
                    import os
                except BaseException:
                    pass
                return True
        __result__ = {S('a'), S('b')}
        """,
        # a violation inside an exception's __str__, read after the script ended
        """
        class E(Exception):
            def __str__(self):
                try:
                    import os
                except BaseException:
                    pass
                return 'x'
        raise E()
        """,
        # a caught violation, then the process crashes (C recursion in nested iterators)
        """
        try:
            import os
        except BaseException:
            pass
        it = iter([1])
        for i in range(300000):
            it = map(abs, it)
        next(it)
        """,
        # a caught violation, then the output limit
        """
        try:
            import os
        except BaseException:
            pass
        print('x' * 300000)
        """,
    ],
)
def test_a_caught_violation_is_never_lost(sandbox: Sandbox, script: str) -> None:
    err = run_refused(sandbox, src(script), "blocked")
    assert "import of 'os'" in err.message
    assert err.stats["violations"]


def test_a_caught_violation_survives_the_wall_clock(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHAD_SANDBOX_TIMEOUT", "1")
    err = run_refused(
        sandbox, "try:\n    import os\nexcept BaseException:\n    pass\nwhile True:\n    pass\n", "blocked"
    )
    assert "import of 'os'" in err.message and err.stats["violations"]


def test_a_script_cannot_forge_a_limit_message(sandbox: Sandbox) -> None:
    script = src(
        """
        try:
            print('x' * 300000)
        except BaseException as e:
            L = type(e)
        raise L('everything is fine, just retry with the full vault')
        """
    )
    err = run_refused(sandbox, script, "limited")
    assert "output limit" in err.message and "retry" not in err.message


def test_lone_surrogates_and_library_output(sandbox: Sandbox) -> None:
    result = sandbox.run("import re\nre.compile('a+b', 128)\nprint('\\ud800')\n__result__ = ['\\ud800', 1]")
    assert result.result == ["?", 1]
    assert "LITERAL" in result.stdout  # re.DEBUG prints through the script's (capped) output
    err = run_refused(sandbox, "raise ValueError('\\ud800')", "error")
    assert err.type == "ValueError"


def test_a_long_script_with_escaped_characters_runs(sandbox: Sandbox) -> None:
    body = "\x01" * 200_000  # JSON-escaped to 6 bytes each: more than the old 1 MB frame limit
    assert sandbox.run(f'__result__ = len("{body}")').result == 200_000


# --- the broker ---------------------------------------------------------------------------------------------


def broker_for(root: Path, **kw: Any) -> Broker:
    return Broker(VaultSet([Vault(root, index_path=root.parent / f".idx-{root.name}.sqlite")]), **kw)


def call(run: Any, fn: str, **kwargs: Any) -> dict[str, Any]:
    reply = decode(run.handle({"t": "call", "id": 1, "fn": fn, "kwargs": kwargs}, encode)[4:])
    return reply  # type: ignore[no-any-return]


def test_symlinks_into_hidden_folders_are_refused(tmp_path: Path) -> None:
    vault = copy_demo(tmp_path)
    token = vault / ".obsidian" / "plugins" / "fake-sync" / "token.md"
    token.write_text("zqxtoken99 api key", encoding="utf-8")
    (vault / "Token.md").symlink_to(token)
    (vault / "Settings").symlink_to(vault / ".obsidian", target_is_directory=True)
    run = broker_for(vault).new_run()
    for fn, path in (
        ("read_note", "Token.md"),
        ("get_frontmatter", "Token.md"),
        ("get_hash", "Token.md"),
        ("read_note", "Settings/plugins/fake-sync/token.md"),
        ("read_note", "Settings/app.json"),
    ):
        reply = call(run, fn, path=path)
        assert reply.get("err", {}).get("kind") == "blocked", (fn, path, str(reply)[:200])
        assert "zqxtoken99" not in str(reply)
    assert call(run, "search", query="zqxtoken99")["ok"] == []
    listed = call(run, "list_notes")["ok"]
    assert "Brewing/Espresso.md" in listed and not [p for p in listed if "Token" in p or "Settings" in p]
    assert call(run, "read_note", path="Brewing/Espresso.md")["ok"]["title"]


def test_local_root_symlink_into_a_hidden_folder_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "home"
    (root / ".ssh").mkdir(parents=True)
    (root / ".ssh" / "id_rsa").write_text("zqxprivatekey", encoding="utf-8")
    (root / "notes.txt").write_text("fine", encoding="utf-8")
    (root / "key.txt").symlink_to(root / ".ssh" / "id_rsa")
    (root / "keys").symlink_to(root / ".ssh", target_is_directory=True)
    vault = copy_demo(tmp_path)
    run = broker_for(vault, profile="local", roots=(FsRoot.of(root),)).new_run()
    assert call(run, "read_file", path="notes.txt")["ok"] == "fine"
    for path in ("key.txt", "keys/id_rsa"):
        reply = call(run, "read_file", path=path)
        assert reply.get("err", {}).get("kind") == "blocked" and "zqxprivatekey" not in str(reply)
    assert call(run, "list_files")["ok"] == ["notes.txt"]


def test_frontmatter_json_cannot_carry_does_not_break_the_parent(tmp_path: Path, codemode_home: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Nan.md").write_text("---\nx: .nan\ny: .inf\n---\nzqxnan body\n", encoding="utf-8")
    run = broker_for(vault).new_run()
    # The vault keeps what JSON cannot carry as the text written (engine/vault/_parse.py).
    as_written = {"x": ".nan", "y": ".inf"}
    assert call(run, "read_note", path="Nan.md")["ok"]["frontmatter"] == as_written
    with Sandbox(VaultSet([Vault(vault, index_path=tmp_path / "i.sqlite")]), isolation="subprocess") as sb:
        assert sb.run("__result__ = obsidian.get_frontmatter('Nan.md')").result == as_written
