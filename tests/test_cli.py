"""The ``shad vault`` command line: JSON shapes, options, and one clear line for every failure."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO, write_vault

from engine import cli as cli_mod
from engine.vault import Vault


# Not the shared ``shad_home`` (tests/conftest.py): one home per module, and SHAD_DEBUG is unset too.
@pytest.fixture(scope="module")
def _module_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("shad_home")


@pytest.fixture(autouse=True)
def _shad_home(_module_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One SHAD_HOME for this module (the demo vault is only read, so its index is shared), never the
    user's ~/.shad or the repository."""
    home = _module_home
    monkeypatch.setenv("SHAD_HOME", str(home))
    monkeypatch.delenv("SHAD_DEBUG", raising=False)
    return home


class Result:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self) -> Any:
        return json.loads(self.out)


def shad(*args: str, capsys: pytest.CaptureFixture[str]) -> Result:
    """Run the CLI in-process through ``engine.cli.main`` (what the ``shad`` script calls)."""
    capsys.readouterr()
    code = cli_mod.main([*args])
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


def shad_proc(*args: str) -> Result:
    """Run the CLI as a user does: a separate process."""
    proc = subprocess.run(
        [sys.executable, "-m", "engine.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "80"},
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def assert_one_clear_error(r: Result, code: int | None = None) -> str:
    assert r.code != 0
    if code is not None:
        assert r.code == code, (r.code, r.err)
    assert "Traceback" not in r.out + r.err
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert len(lines) == 1, r.err
    assert lines[0].startswith("shad: error:"), lines[0]
    assert r.out.strip() == ""
    return lines[0]


@pytest.fixture
def two_vaults(tmp_path: Path) -> tuple[Path, Path]:
    a = write_vault(
        tmp_path / "work",
        {"Quince.md": "---\ntype: fruit\ntags: [fruit/pome]\nrating: 5\n---\n# Quince\n\nQuince tart notes."},
    )
    b = write_vault(tmp_path / "personal", {"Pear.md": "# Pear\n\nA pear and a quince."})
    return a, b


# --- index ---


def test_index_json(capsys: pytest.CaptureFixture[str], _shad_home: Path, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(DEMO, vault)
    r = shad("vault", "index", "--vault", str(vault), "--json", capsys=capsys)
    assert r.code == 0, r.err
    data = r.json()
    assert isinstance(data, dict)
    assert data["added"] == len(Vault(DEMO).list_notes())
    assert data["vault"] == "vault"
    assert Path(data["index"]).is_relative_to(_shad_home)
    again = shad("vault", "index", "--vault", str(vault), "--json", capsys=capsys).json()
    assert again["added"] == again["updated"] == again["removed"] == 0


def test_index_text(capsys: pytest.CaptureFixture[str]) -> None:
    r = shad("vault", "index", "--vault", str(DEMO), capsys=capsys)
    assert r.code == 0
    assert "added" in r.out and "vault" in r.out


def test_index_several_vaults(two_vaults: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_vaults
    data = shad("vault", "index", "--vault", str(a), "--vault", str(b), "--json", capsys=capsys).json()
    assert [d["vault"] for d in data] == ["work", "personal"]


# --- status ---


def test_status_json(capsys: pytest.CaptureFixture[str]) -> None:
    r = shad("vault", "status", "--vault", str(DEMO), "--json", capsys=capsys)
    assert r.code == 0, r.err
    s = r.json()
    assert isinstance(s, dict)
    assert s["notes"] == len(Vault(DEMO).list_notes())
    assert s["unresolved_links"] == 2
    assert s["diagnostics"]["invalid_frontmatter"] == 1
    assert s["conflicts"][0]["original"] == "Brewing/Espresso.md"
    assert {p["path"] for p in s["problems"]} >= {"Journal/2026-02-01 Cupping notes.md"}


def test_status_text(capsys: pytest.CaptureFixture[str]) -> None:
    r = shad("vault", "status", "--vault", str(DEMO), capsys=capsys)
    assert r.code == 0
    assert "notes" in r.out
    assert "Espresso (conflict 2026-04-02).md" in r.out
    assert "invalid_frontmatter" in r.out


# --- search ---


def test_search_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    r = shad(
        "vault",
        "search",
        "how long should I rest beans after roasting?",
        "--vault",
        str(DEMO),
        "--json",
        capsys=capsys,
    )
    assert r.code == 0, r.err
    hits = r.json()
    assert isinstance(hits, list) and hits
    for h in hits:
        assert {"vault", "path", "title", "score", "snippet"} <= set(h)
        assert isinstance(h["score"], (int, float))
        assert h["vault"] == "vault"
    assert hits[0]["path"] == "Roasting/Resting beans.md"
    assert hits[0]["heading"] == "How long to rest"


def test_search_text(capsys: pytest.CaptureFixture[str]) -> None:
    r = shad("vault", "search", "first crack", "--vault", str(DEMO), capsys=capsys)
    assert r.code == 0
    assert "Roasting/First crack.md" in r.out.splitlines()[0]


def test_search_no_hits(capsys: pytest.CaptureFixture[str]) -> None:
    r = shad("vault", "search", "zzzqqqx", "--vault", str(DEMO), "--json", capsys=capsys)
    assert r.code == 0 and r.json() == []
    r = shad("vault", "search", "zzzqqqx", "--vault", str(DEMO), capsys=capsys)
    assert r.code == 0
    assert "no notes match" in r.err


def test_search_says_when_it_looked_for_synonyms(capsys: pytest.CaptureFixture[str]) -> None:
    # no demo note says "java": its synonym "coffee" is searched too, and the CLI says so (on stderr)
    r = shad("vault", "search", "java", "--vault", str(DEMO), capsys=capsys)
    assert r.code == 0 and r.out.strip()
    assert "no note holds 'java': also searched for coffee" in r.err
    r = shad("vault", "search", "first crack", "--vault", str(DEMO), capsys=capsys)
    assert "also searched" not in r.err  # every word is in the vault
    r = shad("vault", "search", "java", "--vault", str(DEMO), "--json", capsys=capsys)
    assert r.json() and not r.err.strip()  # the JSON stays a list of hits


def test_search_limit(capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("--limit", "-n"):
        hits = shad(
            "vault", "search", "coffee", "--vault", str(DEMO), flag, "2", "--json", capsys=capsys
        ).json()
        assert len(hits) == 2


def test_search_path_type_tag(capsys: pytest.CaptureFixture[str]) -> None:
    def run(*extra: str) -> list[dict[str, Any]]:
        r = shad(
            "vault",
            "search",
            "roasting",
            "--vault",
            str(DEMO),
            "--limit",
            "50",
            "--json",
            *extra,
            capsys=capsys,
        )
        assert r.code == 0, r.err
        return r.json()  # type: ignore[no-any-return]

    under = run("--path", "Roasting")
    assert under and all(h["path"].startswith("Roasting/") for h in under)
    people = run("--type", "person")
    assert people and all(h["path"].startswith("People/") for h in people)
    espresso = run("--tag", "brewing")
    assert espresso and all(any(t.startswith("brewing") for t in h["tags"]) for h in espresso)
    both = run("--tag", "roasting", "--tag", "freshness")
    assert [h["path"] for h in both] == ["Roasting/Resting beans.md"]


def test_search_where(capsys: pytest.CaptureFixture[str]) -> None:
    def paths(*extra: str) -> set[str]:
        r = shad(
            "vault", "search", "", "--vault", str(DEMO), "--limit", "100", "--json", *extra, capsys=capsys
        )
        assert r.code == 0, r.err
        return {h["path"] for h in r.json()}

    washed = paths("--where", "process=washed")
    assert washed and all(p.startswith("Beans/") for p in washed)
    fives = paths("--where", "rating=5")  # a number in the frontmatter, typed as text on the command line
    assert fives
    fours = paths("--where", "rating=4")
    assert paths("--where", "rating=4", "--where", "rating=5") == fives | fours  # same field repeated: either
    assert paths("--where", "process=washed", "--where", "rating=5") <= washed  # different fields: both


def test_search_dates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_vault(tmp_path / "v", {"old.md": "bean", "new.md": "bean"})
    os.utime(root / "old.md", (1_000_000_000, 1_000_000_000))  # 2001
    r = shad(
        "vault", "search", "bean", "--vault", str(root), "--after", "2010-01-01", "--json", capsys=capsys
    )
    assert [h["path"] for h in r.json()] == ["new.md"]
    r = shad(
        "vault", "search", "bean", "--vault", str(root), "--before", "2010-01-01", "--json", capsys=capsys
    )
    assert [h["path"] for h in r.json()] == ["old.md"]


def test_search_multiple_vaults(two_vaults: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_vaults
    r = shad("vault", "search", "quince", "--vault", str(a), "--vault", str(b), "--json", capsys=capsys)
    assert r.code == 0, r.err
    hits = r.json()
    assert {(h["vault"], h["path"]) for h in hits} == {("work", "Quince.md"), ("personal", "Pear.md")}
    text = shad("vault", "search", "quince", "--vault", str(a), "--vault", str(b), capsys=capsys).out
    assert "work:Quince.md" in text and "personal:Pear.md" in text


def test_search_hostile_query(capsys: pytest.CaptureFixture[str]) -> None:
    for q in ('AND OR NOT NEAR( "unbalanced', "col:val", "*", "-", "((", "'"):
        r = shad("vault", "search", q, "--vault", str(DEMO), "--json", capsys=capsys)
        assert r.code == 0, (q, r.err)
        assert isinstance(r.json(), list)


# --- note and links ---


def test_note_json(capsys: pytest.CaptureFixture[str]) -> None:
    r = shad("vault", "note", "Roasting/First crack.md", "--vault", str(DEMO), "--json", capsys=capsys)
    assert r.code == 0, r.err
    n = r.json()
    assert isinstance(n, dict)
    assert n["path"] == "Roasting/First crack.md"
    assert n["vault"] == "vault"
    assert n["frontmatter"]["type"] == "concept"
    assert "1C" in n["aliases"]
    assert n["body"].lstrip().startswith("# First crack")
    assert any(link["resolved"] == "Roasting/Second crack.md" for link in n["links"])
    assert "Home.md" in n["backlinks"]
    assert {"tags", "headings", "hash", "mtime", "diagnostics"} <= set(n)


def test_note_without_extension_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    r = shad("vault", "note", "Journal/2026-02-01 Cupping notes", "--vault", str(DEMO), capsys=capsys)
    assert r.code == 0, r.err
    assert "Journal/2026-02-01 Cupping notes.md" in r.out
    assert "invalid_frontmatter" in r.out


def test_note_by_name_and_a_name_two_notes_share(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = shad("vault", "note", "Grind size", "--vault", str(DEMO), capsys=capsys)
    assert r.code == 0, r.err
    assert "Brewing/Grind size.md" in r.out
    vault = write_vault(tmp_path / "v", {"Sync/Security.md": "# a", "Publish/Security.md": "# b"})
    line = assert_one_clear_error(shad("vault", "links", "Security", "--vault", str(vault), capsys=capsys))
    assert "Publish/Security.md" in line and "Sync/Security.md" in line


def test_note_from_second_vault(two_vaults: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_vaults
    n = shad("vault", "note", "Pear.md", "--vault", str(a), "--vault", str(b), "--json", capsys=capsys).json()
    assert n["vault"] == "personal"


def test_links_json(capsys: pytest.CaptureFixture[str]) -> None:
    r = shad(
        "vault", "links", "Roasting/Popcorn popper roasting.md", "--vault", str(DEMO), "--json", capsys=capsys
    )
    assert r.code == 0, r.err
    d = r.json()
    assert d["path"] == "Roasting/Popcorn popper roasting.md"
    assert d["vault"] == "vault"
    assert any("Cold smoke roasting" in u for u in d["unresolved"])
    assert "Home.md" in d["backlinks"]
    assert set(d["outgoing"]) <= set(d["neighbors"])
    deeper = shad(
        "vault",
        "links",
        "Roasting/Popcorn popper roasting.md",
        "--vault",
        str(DEMO),
        "--depth",
        "2",
        "--json",
        capsys=capsys,
    ).json()
    assert set(d["neighbors"]) < set(deeper["neighbors"])


def test_links_text(capsys: pytest.CaptureFixture[str]) -> None:
    r = shad("vault", "links", "Home", "--vault", str(DEMO), capsys=capsys)
    assert r.code == 0
    assert "outgoing" in r.out and "backlinks" in r.out


# --- failures: one clear line, no traceback ---


def test_missing_vault_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # once as a real process, then the other commands in-process (the same code path, faster)
    line = assert_one_clear_error(shad_proc("vault", "search", "x", "--vault", str(tmp_path / "nope")), 2)
    assert "nope" in line
    for cmd in (["status"], ["index"], ["note", "a.md"], ["links", "a.md"]):
        r = shad("vault", *cmd, "--vault", str(tmp_path / "nope"), capsys=capsys)
        assert "nope" in assert_one_clear_error(r, 2)


def test_vault_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "note.md"
    f.write_text("hi")
    assert_one_clear_error(shad("vault", "search", "x", "--vault", str(f), capsys=capsys), 2)


def test_empty_vault(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "picture.png").write_bytes(b"\x89PNG")
    for cmd in (["search", "x"], ["status"], ["index"], ["note", "a.md"], ["links", "a.md"]):
        line = assert_one_clear_error(shad("vault", *cmd, "--vault", str(empty), capsys=capsys), 2)
        assert "no notes" in line


@pytest.mark.parametrize(
    "args",
    [
        ["vault", "search", "--vault", "{demo}"],  # missing query
        ["vault", "search", "x"],  # missing --vault
        ["vault", "search", "x", "--vault", "{demo}", "--limit", "0"],
        ["vault", "search", "x", "--vault", "{demo}", "--limit", "lots"],
        ["vault", "search", "x", "--vault", "{demo}", "--bogus"],
        ["vault", "search", "x", "--vault", "{demo}", "--where", "novalue"],
        ["vault", "search", "x", "--vault", "{demo}", "--where", "=x"],
        ["vault", "search", "x", "--vault", "{demo}", "--after", "someday"],
        ["vault", "search", "x", "--vault", "{demo}", "--path", ".obsidian"],
        ["vault", "links", "Home.md", "--vault", "{demo}", "--depth", "0"],
        ["vault", "bogus"],
        ["bogus"],
    ],
)
def test_bad_arguments_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.replace("{demo}", str(DEMO)) for a in args]
    r = shad(*argv, capsys=capsys)
    if "--path" in argv:  # a hidden folder is refused: non-zero with one line, not necessarily 2
        assert_one_clear_error(r)
    else:
        assert_one_clear_error(r, 2)


@pytest.mark.parametrize(
    "path", ["Nope.md", "Roasting/Nope", "../outside.md", "/etc/passwd", ".obsidian/app.json"]
)
def test_unknown_or_forbidden_note(path: str, capsys: pytest.CaptureFixture[str]) -> None:
    for cmd in ("note", "links"):
        r = shad("vault", cmd, path, "--vault", str(DEMO), capsys=capsys)
        line = assert_one_clear_error(r)
        assert "demo-not-a-real-secret" not in r.out + r.err
        assert line


def test_unknown_note_as_a_process() -> None:
    line = assert_one_clear_error(shad_proc("vault", "note", "Nope.md", "--vault", str(DEMO)))
    assert "Nope.md" in line


def test_usage_error_as_a_process() -> None:
    assert_one_clear_error(shad_proc("vault", "search", "x", "--vault", str(DEMO), "--limit", "0"), 2)


def test_internal_error_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(*a: Any, **k: Any) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(Vault, "search", boom)
    r = shad("vault", "search", "x", "--vault", str(DEMO), capsys=capsys)
    line = assert_one_clear_error(r, 1)
    assert "internal error" in line and "kaboom" in line


def test_no_args_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    r = shad(capsys=capsys)
    assert r.code == 0 and "vault" in r.out
    r = shad("vault", "search", "--help", capsys=capsys)
    assert r.code == 0 and "--where" in r.out and "--limit" in r.out
    r = shad("--version", capsys=capsys)
    assert r.code == 0 and "shad" in r.out


def test_end_to_end_subprocess_json(tmp_path: Path) -> None:
    vault = tmp_path / "demo"
    shutil.copytree(DEMO, vault)
    r = shad_proc("vault", "search", "first crack", "--vault", str(vault), "--json", "--limit", "3")
    assert r.code == 0, r.err
    assert "Traceback" not in r.err
    hits = json.loads(r.out)
    assert len(hits) == 3 and hits[0]["path"] == "Roasting/First crack.md"
    r = shad_proc("vault", "status", "--vault", str(vault), "--json")
    assert r.code == 0 and json.loads(r.out)["notes"] > 40
    r = shad_proc("vault", "note", "Home", "--vault", str(vault), "--json")
    assert r.code == 0 and json.loads(r.out)["path"] == "Home.md"


def test_console_script_installed(tmp_path: Path) -> None:
    exe = shutil.which("shad")
    if exe is None:
        pytest.skip("the shad console script is not on PATH")
    proc = subprocess.run(
        [exe, "vault", "search", "x", "--vault", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("shad: error:")
