"""The Code Mode sandbox end to end, on both isolation paths (bubblewrap and a plain subprocess).

Every attack test fails if the attack gets through: it requires a refusal of the right kind, and where
the attack would return data it also checks that nothing leaked. Benign scripts must keep working.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from engine.codemode import Sandbox, SandboxError, SandboxUnavailable
from engine.vault import Vault, VaultSet

try:
    from tests._codemode_fixtures import (
        DEMO_VAULT,
        codemode_env,
        codemode_home,
        copy_demo,
        demo_vaults,
        require_isolation,
        run_refused,
        sandbox,
    )
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from _codemode_fixtures import (  # type: ignore[no-redef]
        DEMO_VAULT,
        codemode_env,
        codemode_home,
        copy_demo,
        demo_vaults,
        require_isolation,
        run_refused,
        sandbox,
    )

__all__ = ["codemode_env", "codemode_home", "sandbox"]  # fixtures used by name


def src(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


# --- benign scripts keep working --------------------------------------------------------------------------


def test_retrieval_script_with_the_usual_idioms(sandbox: Sandbox) -> None:
    result = sandbox.run(
        src(
            """
            import datetime, re, yaml
            from collections import Counter, defaultdict

            class Collector:
                def __init__(self):
                    self.seen = 0
                    self.by_folder = defaultdict(list)
                def add(self, hit):
                    self.seen += 1
                    self.by_folder[hit["path"].split("/")[0]] += [hit["path"]]

            hits = obsidian.search("espresso grind", limit=8)
            c = Collector()
            words = Counter()
            for h in hits:
                c.add(h)
                for w in re.findall(r"[a-z]+", h["snippet"].lower()):
                    words[w] += 1
            note = obsidian.read_note(hits[0]["path"])
            meta = yaml.safe_load("when: 2026-03-14")
            day = datetime.datetime.strptime("2026-03-14", "%Y-%m-%d").date()
            ranked = sorted(hits, key=lambda h: (-h["score"], h["path"]))
            print("found", len(hits))
            __result__ = {
                "seen": c.seen,
                "folders": sorted(c.by_folder),
                "top": ranked[0]["path"],
                "title": note["title"],
                "link": obsidian.create_wikilink(note["path"]),
                "common": words.most_common(1)[0][1] >= 1,
                "meta": str(meta["when"]),
                "day": day,
            }
            """
        )
    )
    r = result.result
    assert r["seen"] >= 3 and "Brewing" in r["folders"]
    assert r["link"].startswith("[[") and r["link"].endswith("]]") and ".md" not in r["link"]
    assert r["common"] is True and r["meta"] == "2026-03-14" and r["day"] == "2026-03-14"
    assert result.stdout.startswith("found ")
    assert result.stats["broker"]["by_function"] == {"search": 1, "read_note": 1, "create_wikilink": 1}


def test_the_whole_obsidian_api(sandbox: Sandbox) -> None:
    result = sandbox.run(
        src(
            """
            p = "Brewing/Espresso.md"
            try:
                obsidian.read_note("Brewing/Nope.md")
                missing = False
            except obsidian.NotFound:
                missing = True
            __result__ = {
                "vaults": obsidian.vaults(),
                "notes": len(obsidian.list_notes()),
                "brewing": obsidian.list_notes("Brewing", recursive=False),
                "fm": obsidian.get_frontmatter(p),
                "hash": obsidian.get_hash(p),
                "links": obsidian.links(p),
                "backlinks": obsidian.backlinks(p),
                "neighbors": obsidian.neighbors(p, depth=1),
                "wikilink": obsidian.create_wikilink(p, heading="Ratio", alias="espresso"),
                "missing": missing,
            }
            """
        )
    )
    r = result.result
    assert r["vaults"] == ["vault"] and r["notes"] >= 30 and "Brewing/Espresso.md" in r["brewing"]
    assert isinstance(r["fm"], dict) and len(r["hash"]) >= 16
    assert r["links"] and r["backlinks"] and set(r["links"]) <= set(r["neighbors"]) | set(r["links"])
    assert r["wikilink"] == "[[Brewing/Espresso#Ratio|espresso]]"
    assert r["missing"] is True


def test_stats_record_isolation_and_layers(sandbox: Sandbox) -> None:
    result = sandbox.run("__result__ = 1")
    stats = result.stats
    assert stats["isolation"] == sandbox.isolation
    assert stats["warm"] is True or stats["durations_ms"]["spawn"] > 0
    assert stats["uid"] == 65534
    assert set(stats["durations_ms"]) >= {"total", "spawn", "compile", "exec", "broker"}
    assert stats["broker"]["calls"] == 0 and stats["violations"] == []
    if stats["seccomp"] is False:
        pytest.skip(f"seccomp unavailable here ({stats['seccomp_source']}); other layers still tested")


def test_ordinary_bugs_are_errors_with_the_line(sandbox: Sandbox) -> None:
    err = run_refused(sandbox, "x = 1\nd = {}\ny = d['missing']\n", "error")
    assert err.type == "KeyError" and err.line == 3 and "line 3" in err.message
    err = run_refused(sandbox, "x = (1,\n", "error")
    assert err.type == "SyntaxError"
    err = run_refused(sandbox, "__result__ = obsidian", "error")
    assert err.type == "ResultError"


# --- escapes: imports, module re-exports, dunder walks, frames, format traversal --------------------------


@pytest.mark.parametrize(
    "script",
    [
        "import os\n__result__ = os.listdir('/')",
        "import sys\n__result__ = sys.modules",
        "import pathlib\n__result__ = str(pathlib.os.environ)",
        "import json\n__result__ = json.codecs.open('/etc/passwd').read()",
        "import datetime\n__result__ = datetime.sys.modules",
        "import enum\n__result__ = enum.sys.modules",
        "import dataclasses\n__result__ = dataclasses.builtins.open('/etc/passwd').read()",
        "import typing\n__result__ = typing.get_type_hints",
        "import yaml\n__result__ = yaml.full_load('!!python/name:os.system')",
        "import yaml\nyaml.SafeLoader.add_constructor('!x', lambda l, n: 1)",
        "__result__ = getattr((), '__cl' + 'ass__')",
        "g = (x for x in [1])\n__result__ = getattr(g, 'gi_fr' + 'ame')",
        "try:\n    1/0\nexcept Exception as e:\n    __result__ = getattr(e, '__trace' + 'back__')",
        "__result__ = '{0.__class__.__mro__}'.format(1)",
        "g = (x for x in [1])\n__result__ = '{0.gi_frame.f_globals}'.format(g)",
        "__result__ = str.format('{0.__class__}', 1)",
        "x = type('X', (), {})",
        "class M(type):\n    pass",
        "import json\njson.loads = lambda s: 'poisoned'",
        "import collections\ncollections.Counter.most_common = lambda self, n=None: []",
        "setattr(obsidian, 'search', None)",
        "f = eval\n__result__ = f('1 + 1')",
        "__result__ = open('/etc/passwd').read()",
        "import pathlib\n__result__ = pathlib.Path('/etc/passwd').read_text()",
        "__result__ = getattr(obsidian, '_chan')",
    ],
)
def test_runtime_escapes_are_blocked(sandbox: Sandbox, script: str) -> None:
    err = run_refused(sandbox, script, "blocked")
    assert err.type == "PolicyViolation" and err.message


@pytest.mark.parametrize(
    "script",
    [
        "__result__ = ().__class__.__bases__[0].__subclasses__()",
        "x = __import__('os')",
        "def f(_getattr_=getattr, /):\n    return ().x\n__result__ = f()",
        "def f(x, _write_=None, /):\n    x.y = 1",
        "try:\n    raise ValueError('x')\nexcept* ValueError:\n    pass",
        "async def f():\n    return 1",
        "class A(metaclass=type):\n    pass",
        "def g():\n    yield 1\n__result__ = g().gi_frame",
        "exec('import os')",
    ],
)
def test_compile_time_escapes_are_blocked(sandbox: Sandbox, script: str) -> None:
    err = run_refused(sandbox, script, "blocked")
    assert "Line" in err.message


def test_caught_violations_still_block_the_run(sandbox: Sandbox) -> None:
    err = run_refused(
        sandbox,
        src(
            """
            try:
                import os
            except BaseException:
                pass
            __result__ = "pretend nothing happened"
            """
        ),
        "blocked",
    )
    assert "import of 'os'" in err.message
    assert err.stats["violations"]


def test_deserialisers_do_not_build_objects(sandbox: Sandbox) -> None:
    err = run_refused(
        sandbox, "import yaml\n__result__ = yaml.safe_load('!!python/object/apply:os.system [id]')", "error"
    )
    assert "ConstructorError" in err.message
    run_refused(sandbox, "import pickle", "blocked")
    run_refused(sandbox, "import marshal", "blocked")


def test_billion_laughs_yaml_in_a_script(sandbox: Sandbox) -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\\n" + "".join(
        f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\\n" for p, n in zip("abcdefgh", "bcdefghi")
    )
    err = run_refused(sandbox, f"import yaml\n__result__ = yaml.safe_load('{bomb}')", "error")
    assert "YAML" in err.message


# --- vault access goes through the broker only ------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        "obsidian.read_note('../../etc/passwd')",
        "obsidian.read_note('/etc/passwd')",
        "obsidian.read_note('Brewing/../../secret.md')",
        "obsidian.read_note('a\\x00b.md')",
        "obsidian.read_note('.obsidian/plugins/fake-sync/data.json')",
        "obsidian.get_frontmatter('.trash/Old draft.md')",
        "obsidian.list_notes('../')",
        "obsidian.search('x', path='../..')",
        "obsidian.read_file('README.md')",
        "obsidian.http_get('https://example.org/')",
    ],
)
def test_vault_traversal_and_profile_escapes_are_blocked(sandbox: Sandbox, call: str) -> None:
    err = run_refused(sandbox, f"__result__ = {call}", "blocked")
    assert "passwd" not in str(err.stdout)


def test_symlink_out_of_the_vault_is_refused(tmp_path: Path, codemode_home: Path) -> None:
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("zqxleak42", encoding="utf-8")
    vault = copy_demo(tmp_path)
    (vault / "Leak.md").symlink_to(secret)
    (vault / "LeakDir").symlink_to(secret.parent, target_is_directory=True)
    vaults = VaultSet([Vault(vault, index_path=tmp_path / "idx.sqlite")])
    with Sandbox(vaults, isolation="subprocess") as sb:
        for call in ("obsidian.read_note('Leak.md')", "obsidian.read_note('LeakDir/secret.md')"):
            err = run_refused(sb, f"__result__ = {call}", "blocked")
            assert "zqxleak42" not in err.message
        found = sb.run("__result__ = [obsidian.search('zqxleak42'), obsidian.list_notes()]").result
        assert found[0] == [] and not any("Leak" in p for p in found[1])


# --- resource limits --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "script",
    [
        "import collections, itertools\ncollections.deque(itertools.count(), maxlen=0)",  # a C-level loop
        # a script that swallows every exception and loops again
        "while True:\n    try:\n        while True:\n            pass\n"
        "    except BaseException:\n        pass",
    ],
)
def test_time_limit_kills_the_process_group(
    sandbox: Sandbox, script: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHAD_SANDBOX_TIMEOUT", "1")
    err = run_refused(sandbox, script, "limited")
    assert err.type == "TimeLimit" and "1s" in err.message
    after = sandbox.run("__result__ = 'still serving'")  # the warm process survives the kill
    assert after.result == "still serving"


@pytest.mark.parametrize(
    "script, etype",
    [
        ("x = 'a' * (10 ** 9)", "MemoryError"),
        ("x = [0] * (10 ** 9)", "MemoryError"),
        ("def f(n):\n    return f(n + 1)\nf(0)", "RecursionError"),
        ("for i in range(10 ** 6):\n    print('x' * 100)", "LimitExceeded"),
        ("print('y' * 10 ** 6)", "LimitExceeded"),
        ("__result__ = 'z' * 300_000", "ResultError"),
        ("a = []\nfor i in range(80):\n    a = [a]\n__result__ = a", "ResultError"),
        ("d = {}\nd['self'] = d\n__result__ = d", "ResultError"),
        ("a = ['x' * 20]\nfor i in range(60):\n    a = [a, a]\n__result__ = a", "ResultError"),
    ],
)
def test_resource_bombs_are_limited(sandbox: Sandbox, script: str, etype: str) -> None:
    err = run_refused(sandbox, script, "limited")
    assert err.type == etype
    assert len(err.stdout.encode()) <= 200_000


def test_broker_call_budget(codemode_home: Path) -> None:
    from engine.codemode import Budgets

    with Sandbox(demo_vaults(codemode_home), isolation="subprocess", budgets=Budgets(calls=5)) as sb:
        err = run_refused(sb, "for i in range(10):\n    obsidian.vaults()", "limited")
        assert "5 obsidian calls" in err.message


# --- results travel on their own channel ------------------------------------------------------------------


def test_printed_text_cannot_forge_a_result(sandbox: Sandbox) -> None:
    forged = '{"result": "forged", "stdout": "", "stats": {}}'
    frame = "\\x00\\x00\\x00\\x2a" + '{"t": "done", "status": "ok", "result": 1}'
    result = sandbox.run(f"print({forged!r})\nprint({frame!r})\n__result__ = 'genuine'")
    assert result.result == "genuine"
    assert "forged" in result.stdout and '"t": "done"' in result.stdout


# --- the OS layers hold on their own (probe code runs with no restricted policy at all) -------------------


def test_os_layers_without_the_policy(sandbox: Sandbox) -> None:
    probe = src(
        """
        import os, socket, resource
        out = {}
        def attempt(name, fn):
            try:
                fn()
                out[name] = "ALLOWED"
            except OSError as e:
                out[name] = type(e).__name__
            except ValueError as e:
                out[name] = "ValueError"
        attempt("socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        attempt("unix_socket", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
        attempt("open_read", lambda: open("/etc/passwd").read())
        attempt("open_write", lambda: open("/tmp/shad-sandbox-probe", "w"))
        attempt("mkdir", lambda: os.mkdir("/tmp/shad-sandbox-probe-dir"))
        attempt("fork", os.fork)
        attempt("kill_zygote", lambda: os.kill(os.getppid(), 9))
        attempt("setsid", os.setsid)
        attempt("raise_memory", lambda: resource.setrlimit(resource.RLIMIT_AS, (-1, -1)))
        attempt("lower_memory", lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 20, 1 << 20)))
        out["uid"] = os.getuid()
        out["env"] = sorted(os.environ)
        out["open_fds"] = []
        for fd in range(4, 64):
            try:
                os.fstat(fd)
                out["open_fds"].append(fd)
            except OSError:
                pass
        out["as_limit"] = resource.getrlimit(resource.RLIMIT_AS)[0]
        __result__ = out
        """
    )
    r = sandbox._run_unrestricted(probe).result
    if not sandbox.run("__result__ = 1").stats["seccomp"]:
        pytest.skip("seccomp is unavailable here; the OS probe needs it")
    for name in (
        "socket",
        "unix_socket",
        "open_read",
        "open_write",
        "mkdir",
        "fork",
        "kill_zygote",
        "setsid",
    ):
        assert r[name] == "PermissionError", (name, r[name])
    # setrlimit is refused outright (Python reports the EPERM as ValueError): the limit stays put
    assert r["raise_memory"] in ("PermissionError", "ValueError")
    assert r["lower_memory"] in ("PermissionError", "ValueError")
    assert r["uid"] == 65534
    assert set(r["env"]) <= {"LANG", "TZ", "LC_CTYPE", "PWD"}  # nothing of the caller's environment
    assert r["open_fds"] == []
    assert r["as_limit"] == 512 << 20  # read after both attempts: neither changed it


def test_exec_and_ptrace_kill_the_child(sandbox: Sandbox) -> None:
    if not sandbox.run("__result__ = 1").stats["seccomp"]:
        pytest.skip("seccomp is unavailable here")
    with pytest.raises(SandboxError) as info:
        sandbox._run_unrestricted("import os\nos.execv('/bin/sh', ['sh', '-c', 'echo pwned'])")
    assert info.value.kind == "blocked" and info.value.type == "ForbiddenSyscall"
    assert "pwned" not in info.value.stdout


def test_memory_limit_without_the_policy(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxError) as info:
        sandbox._run_unrestricted("x = bytearray(800 * 1024 * 1024)")
    assert info.value.kind == "limited"


def test_bubblewrap_hides_the_filesystem_and_network(codemode_home: Path) -> None:
    require_isolation("bubblewrap")
    hidden = {"vault": DEMO_VAULT, "index_home": codemode_home, "repo": Path.cwd(), "home": Path.home()}
    probe = (
        "import os\n__result__ = {"
        + ", ".join(f"{name!r}: os.path.exists({str(path)!r})" for name, path in hidden.items())
        + ", 'hostname': os.uname().nodename}\n"
    )
    with Sandbox(demo_vaults(codemode_home), isolation="bubblewrap") as sb:
        r = sb._run_unrestricted(probe).result
    assert r.pop("hostname") == "sandbox"  # its own UTS namespace
    from engine.codemode._zygote import _package_paths

    mounted = [sys.prefix, sys.base_prefix, *_package_paths()]  # the interpreter's own folders
    for name, path in hidden.items():  # a folder holding the interpreter exists inside, as a mount point
        if any(os.path.realpath(m).startswith(os.path.realpath(path) + os.sep) for m in mounted):
            r.pop(name)
    assert not any(r.values()), r  # none of the caller's files exist inside


# --- construction and reuse -------------------------------------------------------------------------------


def test_requesting_bubblewrap_where_unusable_says_so(
    monkeypatch: pytest.MonkeyPatch, codemode_home: Path
) -> None:
    import engine.codemode._sandbox as sandbox_module

    monkeypatch.setattr(sandbox_module, "bwrap_status", lambda: (False, "bwrap is not installed"))
    with pytest.raises(SandboxUnavailable, match="not installed"):
        Sandbox(DEMO_VAULT, isolation="bubblewrap")
    with Sandbox(DEMO_VAULT) as sb:  # auto falls back, and says why
        assert sb.isolation == "subprocess" and "not installed" in sb.isolation_note


def test_closed_sandbox_refuses_and_context_manager_closes(codemode_home: Path) -> None:
    sb = Sandbox(DEMO_VAULT, isolation="subprocess")
    with sb:
        assert sb.run("__result__ = [1, 2]").result == [1, 2]
    with pytest.raises(Exception, match="closed"):
        sb.run("__result__ = 1")


def test_errors_pickle_with_their_fields(sandbox: Sandbox) -> None:
    import pickle

    err = run_refused(sandbox, "print('partial')\nx = {}['k']", "error")
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.kind, copy.type, copy.line, copy.stdout) == ("error", "KeyError", 2, "partial\n")
    assert copy.stats["isolation"] == sandbox.isolation


def test_without_seccomp_the_run_says_so(monkeypatch: pytest.MonkeyPatch, codemode_home: Path) -> None:
    import engine.codemode._zygote as zygote_module

    monkeypatch.setattr(zygote_module, "seccomp_program", lambda: (None, "no libseccomp binding: test"))
    with Sandbox(demo_vaults(codemode_home), isolation="subprocess") as sb:
        result = sb.run("__result__ = len(obsidian.list_notes())")
        assert result.result > 0
        assert result.stats["seccomp"] is False and "no libseccomp" in result.stats["seccomp_source"]
        run_refused(sb, "import os", "blocked")  # the policy and the other layers still hold
