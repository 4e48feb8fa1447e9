"""``shad enrich`` and the ``deep`` preset: the symbol index names exactly the symbols ``ast`` finds, its
notes link to the code notes by full vault path, other languages go through tree-sitter when it is
installed (else they are listed as skipped, with the reason), and the snapshot's notes stay untouched."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from _cli import Result, caller
from _ingest_repo import (
    FILES,
    PROVENANCE,
    ast_symbols,
    body,
    frontmatter,
    make_repo,
    vault_files,
    write_files,
)

from engine.curation import enrich, ingest
from engine.curation._symbols import extract

pytestmark = pytest.mark.usefixtures("shad_home")

PYTHON = {
    "widgets/__init__.py": "widgets",
    "widgets/core.py": "widgets.core",
    "widgets/util.py": "widgets.util",
}
HAS_JS = bool(importlib.util.find_spec("tree_sitter")) and bool(
    importlib.util.find_spec("tree_sitter_javascript")
)


@pytest.fixture
def shad(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    return caller(capsys)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "widgets")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_files(root, {"Home.md": "# Home\n"})
    return root


def expected_python() -> set[str]:
    found: set[str] = set()
    for path, module in PYTHON.items():
        source = FILES[path]
        assert isinstance(source, str)
        found |= ast_symbols(source, module)
    return found


def section(text: str, title: str) -> str:
    match = re.search(rf"^## {title}\n\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    return match.group(1) if match else ""


def test_the_deep_index_names_exactly_the_symbols_ast_finds(repo: Path, vault: Path) -> None:
    result = ingest(str(repo), vault, preset="deep", yes=True)
    assert result.symbols is not None
    index = vault / result.path / "_symbols" / "index.md"
    text = body(index)
    listed = set(re.findall(r"^- `([^`]+)` ", section(text, "Symbols"), re.M))
    python = {name for name in listed if ":" not in name}
    assert python == expected_python()
    assert "widgets.core.Widget.render.pad" not in listed  # a function's local
    assert {"widgets.core.Widget.Style.colour", "widgets.core.Gadget.spin"} <= python
    modules = set(re.findall(r"^- \[\[[^|]+\|([^\]]+)\]\]", section(text, "Modules"), re.M))
    assert set(PYTHON.values()) <= modules
    # the JSON (ingest --json "symbols") lists the same names
    assert {s["name"] for s in result.symbols["symbols"] if ":" not in s["name"]} == expected_python()


def test_symbol_notes_link_to_the_code_by_full_path_and_carry_provenance(repo: Path, vault: Path) -> None:
    result = ingest(str(repo), vault, preset="deep", yes=True)
    folder = vault / result.path / "_symbols"
    core = folder / "widgets.core.md"
    assert f"[[{result.path}/widgets/core.py|widgets/core.py]]" in body(core)
    assert "`widgets.core.make_widget` function, line" in body(core)
    assert "`def make_widget(name: str, *extra: str, **options: int) -> Widget`" in body(core)
    front = frontmatter(core)
    assert front["source_path"] == "widgets/core.py" and front["module"] == "widgets.core"
    code_front = frontmatter(vault / result.path / "widgets/core.py.md")
    assert front["content_hash"] == code_front["content_hash"]
    for note in folder.glob("*.md"):
        assert all(key in frontmatter(note) for key in PROVENANCE), note
    index = body(folder / "index.md")
    assert f"[[{result.path}/_symbols/widgets.util|widgets.util]]" in index
    assert f"[[{result.path}/widgets/util.py|widgets/util.py]]" in index


def test_other_languages_use_tree_sitter_or_are_skipped_with_the_reason(repo: Path, vault: Path) -> None:
    result = ingest(str(repo), vault, preset="deep", yes=True)
    assert result.symbols is not None
    skipped = {s["path"]: s["reason"] for s in result.symbols["skipped"]}
    assert skipped["scripts/build.lua"] == "no symbol extraction for lua yet"
    assert "config.toml" not in skipped  # config is not code: nothing to index, nothing to report
    names = {s["name"] for s in result.symbols["symbols"]}
    if HAS_JS:
        assert {"app.js:hello", "app.js:Panel", "app.js:Panel.show"} <= names
    else:
        assert skipped["app.js"].startswith(("tree-sitter is not installed", "no tree-sitter grammar"))
    text = body(vault / result.path / "_symbols" / "index.md")
    assert "`scripts/build.lua`: no symbol extraction for lua yet" in section(text, "Skipped")


def test_enrich_later_adds_notes_and_changes_none_of_the_snapshot(
    shad: Callable[..., Result], repo: Path, vault: Path
) -> None:
    snap = shad("ingest", str(repo), "--vault", str(vault), "--preset", "mirror", "--yes", "--json").json()
    assert snap["symbols"] is None
    before = vault_files(vault)
    res = shad("enrich", snap["snapshot_id"], "--deep", "--json")
    assert res.code == 0, res.err
    data = res.json()
    assert data["snapshot_id"] == snap["snapshot_id"] and data["deep"] is True
    assert {s["name"] for s in data["symbols"] if ":" not in s["name"]} == expected_python()
    after = vault_files(vault)
    assert all(after[p] == content for p, content in before.items())  # nothing of the snapshot changed
    new = set(after) - set(before)
    assert new == set(data["notes"])
    assert all(p.startswith(f"{snap['path']}/_symbols/") for p in new)
    # enriching again rewrites the same notes and adds nothing
    assert shad("enrich", snap["snapshot_id"], "--deep").code == 0
    assert set(vault_files(vault)) == set(after)


def test_without_deep_only_modules_are_indexed(shad: Callable[..., Result], repo: Path, vault: Path) -> None:
    snap = shad("ingest", str(repo), "--vault", str(vault), "--preset", "mirror", "--yes", "--json").json()
    res = shad("enrich", snap["snapshot_id"])
    assert res.code == 0 and "modules" in res.out
    text = body(vault / snap["path"] / "_symbols" / "index.md")
    assert section(text, "Modules") and not section(text, "Symbols")


def test_unknown_snapshot_is_a_usage_error(shad: Callable[..., Result]) -> None:
    res = shad("enrich", "nothing@2020-01-01", "--deep")
    assert res.code == 2 and "no snapshot" in res.err


def test_a_python_syntax_error_is_skipped_with_its_line(tmp_path: Path, vault: Path) -> None:
    folder = tmp_path / "broken"
    write_files(folder, {"ok.py": "def fine():\n    pass\n", "bad.py": "def broken(:\n"})
    result = ingest(str(folder), vault, preset="deep", yes=True)
    assert result.symbols is not None
    skipped = {s["path"]: s["reason"] for s in result.symbols["skipped"]}
    assert skipped["bad.py"].startswith("Python syntax error at line 1")
    assert [s["name"] for s in result.symbols["symbols"]] == ["ok.fine"]
    again = enrich(result.snapshot_id)
    assert [m.module for m in again.modules] == ["ok"]


@pytest.mark.skipif(not HAS_JS, reason="tree-sitter and its JavaScript grammar are not installed")
def test_tree_sitter_reads_javascript_definitions() -> None:
    code = "function a() {}\nclass B { m() {} }\nconst c = () => 1;\nfunction d() { function local() {} }\n"
    found = extract(code, "x.js", "javascript")
    assert not isinstance(found, str)
    assert [(s.name, s.kind, s.line) for s in found.symbols] == [
        ("a", "function", 1),
        ("B", "class", 2),
        ("B.m", "method", 2),
        ("c", "function", 3),
        ("d", "function", 4),
    ]


def test_without_tree_sitter_other_languages_are_skipped_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from engine.curation import _symbols

    monkeypatch.setattr(_symbols, "_PARSERS", {})
    monkeypatch.setitem(sys.modules, "tree_sitter", None)  # import tree_sitter now raises ImportError
    assert extract("function a() {}\n", "x.js", "javascript") == (
        "tree-sitter is not installed (pip install 'shad[symbols]')"
    )
    assert extract("def f(): pass\n", "x.py", "python") != ""  # Python needs only ast
