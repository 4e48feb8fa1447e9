"""A small real git repository for the ingest tests: known docs, Python modules with known classes and
functions, a JavaScript and a Lua file, a binary, a huge file, a vendored and a hidden folder."""

from __future__ import annotations

import ast
import hashlib
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

GIT = [
    "git",
    "-c",
    "user.name=Shad Test",
    "-c",
    "user.email=shad-test@example.com",
    "-c",
    "init.defaultBranch=main",
    "-c",
    "commit.gpgsign=false",
]

CORE_PY = '''"""The core widgets."""

from __future__ import annotations


class Widget:
    """A thing on the screen."""

    size = 3

    def __init__(self, name: str) -> None:
        self.name = name

    def render(self, width: int = 80) -> str:
        """Draw it."""

        def pad(text: str) -> str:  # local: not part of the module's interface
            return text.ljust(width)

        return pad(self.name)

    class Style:
        def colour(self) -> str:
            return "blue"


class Gadget(Widget):
    async def spin(self, times: int) -> None:
        return None


def make_widget(name: str, *extra: str, **options: int) -> Widget:
    """Build a widget."""
    return Widget(name)


async def fetch_widgets() -> list[Widget]:
    return []
'''

UTIL_PY = '''def frobnicate(zorblax: int) -> int:
    """Frobnicate the zorblax."""
    return zorblax * 2


class Registry:
    def add(self, item: object) -> None:
        pass
'''

FILES: dict[str, str | bytes] = {
    "README.md": "# Widgets\n\nA small library of widgets. Frobnicate the zorblax with care.\n",
    "CHANGELOG": "1.0: the first widgets\n",
    "docs/guide.md": (
        "---\ntags: [guide]\nauthor: Ada\n---\n# Guide\n\nThe zorblax needs frobnicating daily.\n"
    ),
    "docs/api.rst": "API\n===\n\nmake_widget builds widgets.\n",
    "notes.txt": "Plain notes about quasar calibration.\n",
    "widgets/__init__.py": '"""Widgets for everyone."""\n\nfrom .core import Widget\n',
    "widgets/core.py": CORE_PY,
    "widgets/util.py": UTIL_PY,
    "app.js": "function hello(name) { return name }\nclass Panel {\n  show() { return 1 }\n}\n",
    "scripts/build.lua": "local function build() return 1 end\n",
    "config.toml": "[tool]\nname = 'widgets'\n",
    "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00",
    "data/huge.txt": "x" * 1_100_000,
    "node_modules/dep/index.js": "module.exports = 1\n",
    ".github/ci.yml": "on: push\n",
}
PROVENANCE = ("source_url", "source_type", "ingested_at", "source_revision", "content_hash", "snapshot_id")


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True, text=True)
    return proc.stdout.strip()


def write_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")


def make_repo(root: Path, files: Mapping[str, str | bytes] = FILES) -> Path:
    """``root`` as a git repository holding ``files`` in one commit."""
    root.mkdir(parents=True, exist_ok=True)
    write_files(root, files)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def commit(repo: Path, files: Mapping[str, str | bytes], message: str = "more") -> str:
    write_files(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return head(repo)


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def frontmatter(note: Path) -> dict[str, Any]:
    text = note.read_text(encoding="utf-8")
    assert text.startswith("---\n"), note
    block = text[4 : text.index("\n---\n", 4)]
    data = yaml.safe_load(block)
    assert isinstance(data, dict)
    return data


def body(note: Path) -> str:
    text = note.read_text(encoding="utf-8")
    return text[text.index("\n---\n", 4) + 5 :]


def vault_files(vault: Path) -> dict[str, bytes]:
    return {p.relative_to(vault).as_posix(): p.read_bytes() for p in sorted(vault.rglob("*")) if p.is_file()}


def ast_symbols(source: str, module: str) -> set[str]:
    """What the symbol index must name for a Python module: its top-level classes and functions and what
    classes define (recursively), qualified as ``module.Class.method``; a function's locals are not."""
    found: set[str] = set()

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                found.add(f"{prefix}.{node.name}")
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{prefix}.{node.name}")

    visit(ast.parse(source).body, module)
    return found
