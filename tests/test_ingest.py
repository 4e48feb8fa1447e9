"""``shad ingest``: a real git repository built here (and a plain folder, a bare repository, ``file://``
URLs) becomes an immutable snapshot of provenance-stamped notes; an unchanged revision writes nothing;
headless runs without ``--yes`` write nothing at all."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from _cli import Result, caller
from _ingest_repo import (
    FILES,
    PROVENANCE,
    body,
    commit,
    frontmatter,
    head,
    make_repo,
    sha256,
    vault_files,
    write_files,
)

from engine.cli._ingest import PRESETS
from engine.curation import INGEST_PRESETS, ConsentRequired, ShadowIndex, ingest
from engine.curation._git import resolve_source
from engine.errors import UsageError

pytestmark = pytest.mark.usefixtures("shad_home")

SNAPSHOT = re.compile(r"^Sources/local/widgets/\d{4}-\d{2}-\d{2}$")


@pytest.fixture
def shad(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    return caller(capsys)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "widgets")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_files(root, {"Home.md": "# Home\n\nMy notes.\n"})
    return root


def test_the_cli_presets_are_the_engine_presets() -> None:
    assert PRESETS == INGEST_PRESETS


def test_every_note_of_a_git_snapshot_carries_its_provenance(
    shad: Callable[..., Result], repo: Path, vault: Path
) -> None:
    res = shad("ingest", str(repo), "--vault", str(vault), "--preset", "mirror", "--yes", "--json")
    assert res.code == 0, res.err
    data = res.json()
    assert set(data) >= {"snapshot_id", "source_id", "path", "files", "skipped", "revision", "unchanged"}
    assert SNAPSHOT.match(data["path"]) and data["source_id"] == "widgets"
    assert data["snapshot_id"] == "widgets@" + data["path"].rsplit("/", 1)[1]
    assert data["revision"] == head(repo) and data["unchanged"] is False
    snap = vault / data["path"]
    notes = sorted(p for p in snap.rglob("*.md"))
    ingested = {
        "README.md",
        "CHANGELOG",
        "docs/guide.md",
        "docs/api.rst",
        "notes.txt",
        "widgets/__init__.py",
        "widgets/core.py",
        "widgets/util.py",
        "app.js",
        "scripts/build.lua",
        "config.toml",
    }
    assert data["files"] == len(ingested)
    seen = set()
    for note in notes:
        front = frontmatter(note)
        for key in (*PROVENANCE, "source_path"):
            assert key in front, f"{note} lacks {key}"
        assert front["source_url"] == repo.resolve().as_uri()
        assert front["source_type"] == "git"
        assert front["source_revision"] == head(repo)
        assert front["snapshot_id"] == data["snapshot_id"]
        assert re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$", front["ingested_at"])
        if note.name != "_snapshot.md":
            original = (repo / front["source_path"]).read_bytes()
            assert front["content_hash"] == sha256(original)
            seen.add(front["source_path"])
    assert seen == ingested
    # a markdown file keeps its text and its own frontmatter; other files are fenced code
    guide = snap / "docs/guide.md"
    assert frontmatter(guide)["tags"] == ["guide"] and frontmatter(guide)["author"] == "Ada"
    assert body(guide) == "# Guide\n\nThe zorblax needs frobnicating daily.\n"
    core = body(snap / "widgets/core.py.md")
    assert "```python\n" + FILES["widgets/core.py"] + "```\n" in core  # type: ignore[operator]
    assert frontmatter(snap / "widgets/core.py.md")["language"] == "python"
    # the index note links every file by its full vault path
    index = body(snap / "_snapshot.md")
    for path in ingested:
        note = path[:-3] if path.endswith(".md") else path
        assert f"[[{data['path']}/{note}|{path}]]" in index
    assert (
        data["notes"][-1] == f"{data['path']}/_snapshot.md" or f"{data['path']}/_snapshot.md" in data["notes"]
    )


def test_binary_huge_vendored_and_hidden_files_are_skipped_with_reasons(repo: Path, vault: Path) -> None:
    result = ingest(str(repo), vault, preset="mirror", yes=True)
    reasons = {s.path: s.reason for s in result.skipped}
    assert reasons["logo.png"].startswith("binary")
    assert reasons["data/huge.txt"].startswith("too large (1,100,000 bytes")
    assert reasons["node_modules/"] == "vendored or generated folder"
    assert reasons[".github/"].startswith("hidden")
    written = {p.relative_to(vault / result.path).as_posix() for p in (vault / result.path).rglob("*")}
    assert not any(w.startswith(("logo", "data", "node_modules", ".github")) for w in written)
    listing = body(vault / result.path / "_snapshot.md")
    assert "`logo.png`: binary" in listing and "`data/huge.txt`: too large" in listing


@pytest.mark.parametrize(
    ("preset", "included", "left_out"),
    [
        (
            "docs",
            {"README.md", "CHANGELOG", "docs/guide.md", "docs/api.rst", "notes.txt"},
            {"widgets/core.py", "app.js", "config.toml"},
        ),
        (
            "deep",
            {"README.md", "docs/guide.md", "widgets/core.py", "app.js", "config.toml", "scripts/build.lua"},
            {"logo.png"},
        ),
    ],
)
def test_presets_choose_the_files(
    repo: Path, vault: Path, preset: str, included: set[str], left_out: set[str]
) -> None:
    result = ingest(str(repo), vault, preset=preset, yes=True)
    paths = {frontmatter(n)["source_path"] for n in (vault / result.path).rglob("*.md")}
    assert included <= paths
    assert not left_out & paths
    assert result.excluded > 0


def test_an_unchanged_revision_writes_nothing_and_says_so(
    shad: Callable[..., Result], repo: Path, vault: Path
) -> None:
    first = shad("ingest", str(repo), "--vault", str(vault), "--yes", "--json").json()
    before = vault_files(vault)
    index_before = ShadowIndex().export()
    # the same repository as a file:// URL is the same source
    again = shad("ingest", repo.resolve().as_uri(), "--vault", str(vault), "--yes")
    assert again.code == 0, again.err
    assert f"unchanged: snapshot {first['snapshot_id']} already holds revision {head(repo)}" in again.out
    as_json = shad("ingest", str(repo), "--vault", str(vault), "--json").json()  # no --yes needed: no write
    assert as_json["unchanged"] is True and as_json["snapshot_id"] == first["snapshot_id"]
    assert vault_files(vault) == before
    assert ShadowIndex().export() == index_before


def test_a_new_commit_makes_a_new_snapshot_and_keeps_the_old_one(repo: Path, vault: Path) -> None:
    first = ingest(str(repo), vault, yes=True)
    old = vault_files(vault)
    revision = commit(repo, {"docs/new.md": "# New\n\nA second page.\n"})
    second = ingest(repo.resolve().as_uri(), vault, yes=True)
    assert second.revision == revision and not second.unchanged
    assert second.path == first.path + "-2" and second.snapshot_id == first.snapshot_id + "-2"
    now = vault_files(vault)
    assert all(now[p] == data for p, data in old.items())  # the first snapshot is immutable
    assert f"{second.path}/docs/new.md" in now and f"{first.path}/docs/new.md" not in now


def test_headless_without_yes_refuses_and_writes_nothing(
    shad: Callable[..., Result], repo: Path, vault: Path, shad_home: Path
) -> None:
    before = vault_files(vault)
    res = shad("ingest", str(repo), "--vault", str(vault))
    assert res.code == 2
    assert "--yes" in res.err and "files" in res.err and "Sources/local/widgets" in res.err
    assert vault_files(vault) == before
    assert not (shad_home / "sources.sqlite").exists()
    with pytest.raises(ConsentRequired) as caught:
        ingest(str(repo), vault)
    assert (
        caught.value.files == 5 and str(vault.resolve() / "Sources/local/widgets") in caught.value.destination
    )
    assert vault_files(vault) == before


def test_a_declined_confirmation_writes_nothing(repo: Path, vault: Path) -> None:
    shown = []

    def decline(plan: object) -> bool:
        shown.append(plan.describe())  # type: ignore[attr-defined]
        return False

    before = vault_files(vault)
    with pytest.raises(UsageError, match="declined"):
        ingest(str(repo), vault, confirm=decline)
    assert vault_files(vault) == before
    assert shown and "5 files" in shown[0] and "Sources/local/widgets/" in shown[0]
    result = ingest(str(repo), vault, confirm=lambda plan: True)
    assert result.files == 5


def test_a_plain_folder_is_revisioned_by_its_content(tmp_path: Path, vault: Path) -> None:
    folder = tmp_path / "handbook"
    write_files(
        folder, {"intro.md": "# Intro\n\nWelcome.\n", "faq.txt": "Q: why?\n", "img.gif": b"GIF\x00\x01"}
    )
    first = ingest(str(folder), vault, preset="mirror", yes=True)
    assert first.revision.startswith("sha256:") and first.path.startswith("Sources/local/handbook/")
    assert frontmatter(vault / first.path / "intro.md")["source_type"] == "folder"
    assert {s.path for s in first.skipped} == {"img.gif"}
    assert ingest(str(folder), vault, preset="mirror", yes=True).unchanged
    (folder / "faq.txt").write_text("Q: why not?\n", encoding="utf-8")
    second = ingest(str(folder), vault, preset="mirror", yes=True)
    assert not second.unchanged and second.revision != first.revision


def test_a_bare_repository_and_its_file_url_ingest_offline(tmp_path: Path, repo: Path, vault: Path) -> None:
    bare = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    by_path = ingest(str(bare), vault, yes=True)
    assert by_path.source_id == "mirror" and by_path.revision == head(repo)
    assert ingest(bare.resolve().as_uri(), vault, yes=True).unchanged


def test_domain_option_and_bad_sources(shad: Callable[..., Result], repo: Path, vault: Path) -> None:
    res = shad("ingest", str(repo), "--vault", str(vault), "--domain", "example.org", "--yes", "--json")
    assert res.code == 0 and res.json()["path"].startswith("Sources/example.org/widgets/")
    missing = shad("ingest", str(repo / "nope"), "--vault", str(vault), "--yes")
    assert missing.code == 2 and "no such folder" in missing.err
    inside = shad("ingest", str(vault), "--vault", str(vault), "--yes")
    assert inside.code == 2 and "overlap" in inside.err
    bad = shad("ingest", str(repo), "--vault", str(vault), "--domain", "../up", "--yes")
    assert bad.code == 2 and "--domain" in bad.err


def test_vault_search_finds_the_ingested_notes(shad: Callable[..., Result], repo: Path, vault: Path) -> None:
    path = shad("ingest", str(repo), "--vault", str(vault), "--preset", "deep", "--yes", "--json").json()[
        "path"
    ]
    hits = shad("vault", "search", "zorblax frobnicating", "--vault", str(vault), "--json")
    assert hits.code == 0, hits.err
    found = [h["path"] for h in hits.json()]
    assert f"{path}/docs/guide.md" in found
    code_hits = shad("vault", "search", "frobnicate", "--vault", str(vault), "--json").json()
    assert f"{path}/widgets/util.py.md" in [h["path"] for h in code_hits]


def test_the_text_output_lists_what_was_done(shad: Callable[..., Result], repo: Path, vault: Path) -> None:
    res = shad("ingest", str(repo), "--vault", str(vault), "--yes")
    assert res.code == 0
    assert "ingested 5 files of" in res.out and "_snapshot.md" in res.out
    assert "skipped data/huge.txt: too large" in res.out


def _on_a_terminal(args: list[str], answer: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``shad ARGS`` with a pseudo-terminal as stdin (so it asks) and ``answer`` typed in."""
    import os
    import pty
    import sys

    master, slave = pty.openpty()
    try:
        os.write(master, answer.encode())
        env = {**os.environ, "SHAD_HOME": str(home)}
        return subprocess.run(
            [sys.executable, "-m", "engine.cli", *args],
            stdin=slave,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            cwd=Path(__file__).resolve().parent.parent,
        )
    finally:
        os.close(master)
        os.close(slave)


def test_on_a_terminal_it_asks_first(repo: Path, vault: Path, shad_home: Path) -> None:
    before = vault_files(vault)
    declined = _on_a_terminal(["ingest", str(repo), "--vault", str(vault)], "n\n", shad_home)
    assert declined.returncode == 2, declined.stderr
    assert "Ingest 5 files of" in declined.stderr and "Sources/local/widgets" in declined.stderr
    assert "declined" in declined.stderr
    assert vault_files(vault) == before
    accepted = _on_a_terminal(["ingest", str(repo), "--vault", str(vault), "--json"], "y\n", shad_home)
    assert accepted.returncode == 0, accepted.stderr
    assert json.loads(accepted.stdout)["files"] == 5  # the question went to stderr: stdout is the JSON


@pytest.mark.parametrize(
    ("target", "url", "domain", "name"),
    [
        ("https://github.com/Owner/Repo", "https://github.com/Owner/Repo", "github.com", "Repo"),
        ("https://github.com/Owner/Repo.git/", "https://github.com/Owner/Repo", "github.com", "Repo"),
        ("git@gitlab.com:group/tool.git", "git@gitlab.com:group/tool", "gitlab.com", "tool"),
        ("ssh://git@example.org:2222/x/lib.git", "ssh://git@example.org:2222/x/lib", "example.org", "lib"),
        (
            "https://user:s3cret@git.example.org/t/app",
            "https://git.example.org/t/app",
            "git.example.org",
            "app",
        ),
    ],
)
def test_git_urls_name_their_domain_and_source(target: str, url: str, domain: str, name: str) -> None:
    spec = resolve_source(target)
    assert (spec.url, spec.type, spec.domain, spec.name, spec.clone_url) == (url, "git", domain, name, target)


def test_urls_that_are_no_repository_are_usage_errors() -> None:
    for target in ("ftp://example.org/x", "https://github.com/", ""):
        with pytest.raises(UsageError):
            resolve_source(target)


def test_a_file_the_vault_writer_refuses_is_listed_and_the_snapshot_still_lands(
    tmp_path: Path, vault: Path
) -> None:
    """``Callable[[int], None]`` opens ``[[`` without ``]]`` on its line. Until the writer ignores code
    blocks in that check it refuses the note: then the file is listed as skipped with the writer's reason
    (and the index note, which quotes the reason, is still written); once it ignores them, it is ingested."""
    folder = tmp_path / "typed"
    write_files(
        folder, {"hooks.py": "def on(cb: Callable[[int], None]) -> None:\n    pass\n", "a.md": "# A\n"}
    )
    result = ingest(str(folder), vault, preset="mirror", yes=True)
    refused = {s.path: s.reason for s in result.skipped}
    if "hooks.py" in refused:
        assert refused["hooks.py"].startswith("refused by the vault writer: a wikilink never closes")
        assert result.files == 1 and "`hooks.py`: refused" in body(vault / result.path / "_snapshot.md")
    else:
        assert result.files == 2 and (vault / result.path / "hooks.py.md").is_file()


def test_build_and_dist_are_skipped_only_at_the_top(tmp_path: Path, vault: Path) -> None:
    folder = tmp_path / "proj"
    write_files(
        folder,
        {
            "build/out.txt": "generated\n",
            "dist/pkg.txt": "generated\n",
            "src/build/rules.md": "# Rules\n",
            "lib/node_modules/x.txt": "vendored\n",
            "keep.md": "# Keep\n",
        },
    )
    result = ingest(str(folder), vault, preset="mirror", yes=True)
    assert {s.path: s.reason for s in result.skipped} == {
        "build/": "vendored or generated folder",
        "dist/": "vendored or generated folder",
        "lib/node_modules/": "vendored or generated folder",
    }
    assert (vault / result.path / "src/build/rules.md").is_file()
