"""What ``shad`` writes to a pipe and to a terminal (``engine/cli/_term.py``): no citation or path is ever
cut. Piped output is plain full lines (a subprocess with ``COLUMNS=60`` and stdout a pipe); on a
pseudo-terminal 60 columns wide, layouts wrap at word boundaries and nothing is dropped. Runs use the
offline provider over a copy of the demo vault (and one real vault, skipped when ../shared is absent)."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from engine.cli import main
from engine.cli._term import shorten, show_markdown
from engine.retrieval.citations import extract_citations

REPO = Path(__file__).resolve().parent.parent
MULTI = (
    "How long should roasted beans rest before brewing? What grind size suits a French press? "
    "How do I filter tap water for brewing?"
)
# no checkpoint: on a terminal one would ask (and wait), and the output is what these tests read
OFFLINE = ("--provider", "offline", "--no-checkpoints")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
ENUM_NAME = re.compile(r"\b(NodeStatus|RunStatus|EventKind|Tier)\.[A-Z_]+")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "SHAD_"))}
    env |= {"SHAD_HOME": str(tmp_path / "home"), "SHAD_STORE": str(tmp_path / "store.sqlite3")}
    env |= {"COLUMNS": "60", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    return env


@pytest.fixture
def vault(tmp_path: Path, demo_vault: Path) -> Path:
    return Path(shutil.copytree(demo_vault, tmp_path / "vault"))


def shad(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``shad ARGS`` as a process, stdout and stderr pipes (as ``shad ... | cat``)."""
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def shad_on_a_terminal(*args: str, env: dict[str, str], columns: int = 60) -> tuple[int, str]:
    """``shad ARGS`` with stdin, stdout and stderr on a pseudo-terminal ``columns`` wide; the exit code
    and everything it showed, ANSI codes removed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    terminal_env = {k: v for k, v in env.items() if k != "COLUMNS"}  # the terminal's own width rules
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", *args], cwd=REPO, env=terminal_env,
        stdin=slave, stdout=slave, stderr=slave, close_fds=True,
    )  # fmt: skip
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        code = proc.wait(60)
    return code, ANSI.sub("", b"".join(chunks).decode("utf-8", "replace"))


def wikilink(citation: dict[str, Any]) -> str:
    """A summary's citation as the report writes it: ``[[Path/Note#Heading]]``."""
    target = str(citation["path"]).removesuffix(".md")
    if citation.get("heading"):
        target += f"#{citation['heading']}"
    elif citation.get("block"):
        target += f"#^{citation['block']}"
    return f"[[{target}]]"


def cited(text: str) -> set[tuple[str, str | None]]:
    """The (note, heading) pairs of every whole wikilink in ``text``."""
    return {(c.path, c.heading) for c in extract_citations(text)}


def squeezed(text: str) -> str:
    return "".join(text.split())


def shown_whole(link: str, screen: str) -> bool:
    """Is ``link`` on the screen with nothing dropped, once its wrapped or folded lines are joined? In
    running text the lines simply join; in a table cell it is read down its column (from where the
    ``[[`` starts to the end of the line: the report's tables end with their source column)."""
    want = squeezed(link)
    if want in squeezed(screen):
        return True
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        at = line.find(want[:6])
        if at >= 0 and squeezed("".join(ln[at:] for ln in lines[i : i + 8])).startswith(want):
            return True
    return False


def json_run(goal: str, vault: Path, env: dict[str, str]) -> dict[str, Any]:
    r = shad("run", goal, "--vault", str(vault), *OFFLINE, "--json", env=env)
    assert r.returncode == 0, r.stderr
    summary: dict[str, Any] = json.loads(r.stdout)
    assert summary["citations"], summary
    return summary


def node_citations(
    run_id: str, node: str, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> list[dict[str, Any]]:
    """``shad trace node RUN NODE --json``'s citations (in process: only the text output is piped)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SHAD_HOME", env["SHAD_HOME"])
        capsys.readouterr()
        assert main(["trace", "node", run_id, node, "--json"]) == 0
        return list(json.loads(capsys.readouterr().out)["citations"])


# --- piped: full lines ------------------------------------------------------------------------------------


def assert_every_citation_whole(text: str, citations: list[dict[str, Any]]) -> None:
    found = cited(text)
    for c in citations:
        assert (str(c["path"]).removesuffix(".md"), c.get("heading")) in found, (wikilink(c), text)
        assert wikilink(c) in text


def test_piped_run_and_trace_node_keep_every_citation_of_the_json_whole(
    vault: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    summary = json_run(MULTI, vault, env)
    run_id = summary["run_id"]

    piped = shad("run", MULTI, "--vault", str(vault), *OFFLINE, env=env)
    assert piped.returncode == 0, piped.stderr
    assert_every_citation_whole(piped.stdout, summary["citations"])
    assert max(map(len, piped.stdout.splitlines())) > 60  # full lines: nothing wrapped at COLUMNS
    # the status line keeps the report's path on one line, whole (copy-paste works)
    (status_line,) = [ln for ln in piped.stderr.splitlines() if "report:" in ln]
    report = status_line.rsplit("report: ", 1)[1].strip()
    assert Path(report).is_file() and report.endswith("final.report.md")

    tree = shad("trace", "tree", run_id, env=env)
    assert tree.returncode == 0, tree.stderr
    node_ids = [m.group(1) for m in re.finditer(r"── (\S+) ", tree.stdout)]
    assert "root" in node_ids and len(node_ids) >= 4, tree.stdout
    with_citations = 0
    for node in node_ids:
        citations = node_citations(run_id, node, env, capsys)
        text = shad("trace", "node", run_id, node, env=env)
        assert text.returncode == 0, text.stderr
        assert_every_citation_whole(text.stdout, citations)
        with_citations += bool(citations)
    assert with_citations >= 3


def test_piped_trace_tree_and_status_print_whole_tasks_and_paths(vault: Path, env: dict[str, str]) -> None:
    summary = json_run(MULTI, vault, env)
    tree = shad("trace", "tree", summary["run_id"], env=env)
    root_line = next(ln for ln in tree.stdout.splitlines() if "── root " in ln)
    assert MULTI in root_line  # the whole task, on one line
    status = shad("status", summary["run_id"], env=env)
    assert f"report: {summary['report_path']}" in status.stdout.splitlines()[2]


def test_piped_trace_node_on_a_real_vault_keeps_long_citations_whole(
    shared_vaults: Path, tmp_path: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: ``shad trace node RUN NODE | cat`` ended a bullet at ``[[Obsidian Sync/Frequent``.
    The real Obsidian Help vault is only read (the run's history goes to tmp_path)."""
    goal = "How do I set up Obsidian Sync on a new device, and what happens to conflicting edits?"
    help_vault = shared_vaults / "obsidian-help"
    r = shad(
        "run", goal, "--vault", str(help_vault), *OFFLINE, "--history-dir", str(tmp_path / "runs"), "--json",
        env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert any(len(wikilink(c)) > 60 for c in summary["citations"])  # longer than the 60 columns
    tree = shad("trace", "tree", summary["run_id"], env=env)
    nodes = re.findall(r"── (\S+) ", tree.stdout)
    assert "root" in nodes, tree.stdout
    for node in nodes:
        text = shad("trace", "node", summary["run_id"], node, env=env)
        assert text.returncode == 0, text.stderr
        assert_every_citation_whole(text.stdout, node_citations(summary["run_id"], node, env, capsys))


def test_piped_tables_keep_long_values_whole(tmp_path: Path, env: dict[str, str]) -> None:
    """A note's frontmatter (``shad vault note``) is a table: piped, a long value stays on its line."""
    source = "https://example.org/a/rather/long/path/to/the/original/article/about/resting-roasted-beans.html"
    vault = tmp_path / "notes"
    vault.mkdir()
    (vault / "Resting.md").write_text(
        f"---\nsource: {source}\nsummary: Rest roasted beans three to seven days before brewing them.\n---\n"
        "# Resting\n\nRest roasted beans for a few days.\n",
        encoding="utf-8",
    )
    r = shad("vault", "note", "Resting.md", "--vault", str(vault), env=env)
    assert r.returncode == 0, r.stderr
    assert re.search(rf"^\s*source\s+\"{re.escape(source)}\"$", r.stdout, re.M), r.stdout
    assert "Rest roasted beans three to seven days before brewing them." in r.stdout


# --- on a terminal: wrapped at word boundaries, never cut --------------------------------------------------


def test_on_a_60_column_terminal_citations_are_wrapped_not_cut(
    vault: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    summary = json_run(MULTI, vault, env)
    code, shown = shad_on_a_terminal("run", MULTI, "--vault", str(vault), *OFFLINE, env=env)
    assert code == 0, shown
    # after the live view (drawn over and over in place): the final tree, the report, the status line
    report_part = re.split(r"shad \d{8}-\d{6}-[0-9a-f]{4}\n", shown)[-1].split("SUCCESS ·")[0]
    lines = [ln for ln in report_part.splitlines() if ln.strip()]
    assert len(lines) > 20 and max(len(ln) for ln in lines) <= 60  # wrapped to the terminal ...
    for c in summary["citations"]:  # ... and every citation whole once the lines are joined again
        assert shown_whole(wikilink(c), report_part), wikilink(c)
    assert not re.search(r"\[\[[^\]\n]*…", shown)  # no citation ends in an ellipsis
    # the report's path on one line (the terminal wraps it for the eye; a copy takes it whole)
    assert re.search(r"report: (/\S+/final\.report\.md)\n", shown), shown[-400:]

    for node in ("gather_evidence", "gather_evidence_2", "gather_evidence_3"):
        code, shown = shad_on_a_terminal("trace", "node", summary["run_id"], node, env=env)
        assert code == 0, shown
        assert max(len(ln) for ln in shown.splitlines()) <= 60
        for c in node_citations(summary["run_id"], node, env, capsys):
            assert shown_whole(wikilink(c), shown), (wikilink(c), shown)
        assert not re.search(r"\[\[[^\]\n]*…", shown)


def test_a_markdown_table_on_a_narrow_terminal_folds_its_cells_instead_of_cutting_them() -> None:
    table = (
        "| Method | Water temp | Ratio | Grind | Time | source |\n| --- | --- | --- | --- | --- | --- |\n"
        "| French press | 94 °C | 1:15 | coarse | 4:00 steep | [[Reference/Brew ratios#By method]] |\n"
    )
    screen = io.StringIO()
    show_markdown(Console(file=screen, force_terminal=True, width=60, color_system=None), table)
    shown = screen.getvalue()
    assert max(map(len, shown.splitlines())) <= 60 and "…" not in shown
    assert shown_whole("[[Reference/Brew ratios#By method]]", shown)
    assert "Water" in shown and "temp" in shown
    screen = io.StringIO()  # off a terminal: the Markdown source, whole
    show_markdown(Console(file=screen, width=60), table)
    assert screen.getvalue() == ""  # written with click.echo to stdout instead, as the source


# --- enum names never leak ----------------------------------------------------------------------------------


def test_no_enum_name_in_any_run_output(vault: Path, env: dict[str, str]) -> None:
    summary = json_run(MULTI, vault, env)
    run_id = summary["run_id"]
    node = shad("trace", "node", run_id, "gather_evidence", env=env)
    assert re.search(r"^status\s+SUCCEEDED$", node.stdout, re.M), node.stdout
    assert re.search(r"^parent\s+root$", node.stdout, re.M)
    assert "None" not in node.stdout
    outputs = [node.stdout]
    for args in (["status", run_id], ["status"], ["runs"], ["trace", "tree", run_id]):
        r = shad(*args, env=env)
        assert r.returncode == 0, r.stderr
        outputs.append(r.stdout + r.stderr)
    for text in outputs:
        assert not ENUM_NAME.search(text), text


# --- shortening --------------------------------------------------------------------------------------------


def test_shorten_cuts_at_a_word_boundary_and_never_inside_a_wikilink() -> None:
    assert shorten("short  text\n here", 80) == "short text here"
    said = shorten("one two three four five six", 14)
    assert said == "one two three…" and len(said) <= 14
    glimpse = shorten("The overview is [[Roasting/Roasting stages]], then [[Roasting/Maillard phase]] ok", 60)
    assert glimpse == "The overview is [[Roasting/Roasting stages]], then…"
    assert shorten("x" * 50, 10) == "x" * 9 + "…"
