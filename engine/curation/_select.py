"""Which files of a source become notes: the presets, what is always skipped (and why), each file's
language, and the note a file becomes (a markdown file keeps its text; any other file is a note
``<path>.md`` whose body is a fenced code block, so search reads it)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = [
    "MAX_BYTES",
    "PRESETS",
    "Candidate",
    "Skipped",
    "code_block",
    "extract_code",
    "language_of",
    "select_files",
    "walk_folder",
]

PRESETS = ("mirror", "docs", "deep")
MAX_BYTES = 1_000_000  # files above 1 MB are listed as skipped
VENDORED = frozenset({"node_modules", ".venv", "venv", "__pycache__", "bower_components", "site-packages"})
TOP_VENDORED = frozenset({"dist", "build", "vendor"})  # generated or vendored at a source's top only
DOC_EXTENSIONS = frozenset(
    {"md", "markdown", "mdx", "rst", "txt", "adoc", "asciidoc", "org", "textile", "rdoc"}
)
DOC_FOLDERS = frozenset({"docs", "doc", "documentation", "man", "guides", "wiki"})
DOC_NAMES = (
    "readme",
    "changelog",
    "changes",
    "history",
    "news",
    "license",
    "licence",
    "copying",
    "notice",
    "authors",
    "contributing",
    "code_of_conduct",
    "security",
    "install",
    "upgrading",
    "migration",
)
RESERVED = ("_snapshot.md", "_symbols")  # the snapshot's own notes
_UNLINKABLE = re.compile(
    r'[#^\[\]|\\:*?"<>\x00-\x1f\x7f\u200b\u202d\u202e\ufeff]'
)  # Obsidian cannot link these

# Extension (or whole file name) -> the fence's language. Code is what `deep` adds to `docs`.
CODE_LANGUAGES: dict[str, str] = {
    "py": "python", "pyi": "python", "js": "javascript", "mjs": "javascript", "cjs": "javascript",
    "jsx": "jsx", "ts": "typescript", "mts": "typescript", "cts": "typescript", "tsx": "tsx",
    "go": "go", "rs": "rust", "java": "java", "kt": "kotlin", "kts": "kotlin", "scala": "scala",
    "c": "c", "h": "c", "cc": "cpp", "cpp": "cpp", "cxx": "cpp", "hpp": "cpp", "hh": "cpp",
    "cs": "csharp", "rb": "ruby", "php": "php", "swift": "swift", "m": "objectivec", "r": "r",
    "jl": "julia", "lua": "lua", "pl": "perl", "pm": "perl", "sh": "bash", "bash": "bash", "zsh": "bash",
    "fish": "fish", "ps1": "powershell", "sql": "sql", "hs": "haskell", "ml": "ocaml", "ex": "elixir",
    "exs": "elixir", "erl": "erlang", "clj": "clojure", "dart": "dart", "vue": "vue", "svelte": "svelte",
    "zig": "zig", "nim": "nim", "proto": "protobuf", "graphql": "graphql", "gql": "graphql",
    "toml": "toml", "yaml": "yaml", "yml": "yaml", "json": "json", "ini": "ini", "cfg": "ini",
    "xml": "xml", "html": "html", "htm": "html", "css": "css", "scss": "scss", "less": "less",
    "tf": "hcl", "cmake": "cmake", "gradle": "groovy", "groovy": "groovy",
    "dockerfile": "dockerfile", "makefile": "makefile", "justfile": "just",
}  # fmt: skip
PROSE_LANGUAGES = {
    "md": "markdown",
    "markdown": "markdown",
    "mdx": "markdown",
    "rst": "rst",
    "adoc": "asciidoc",
}


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True)
class Candidate:
    """A source file that becomes a note."""

    path: str  # in the source, POSIX
    note: str  # in the snapshot folder, POSIX, ends with .md
    size: int
    sha256: str  # hex digest of the file's bytes
    language: str  # "markdown" for a note kept as it is

    @property
    def is_markdown(self) -> bool:
        return self.path.endswith(".md")


def _extension(path: str) -> str:
    name = PurePosixPath(path).name.lower()
    return name.rsplit(".", 1)[-1] if "." in name.lstrip(".") else name


def language_of(path: str) -> str:
    """The fence language of a file: ``python`` for ``pkg/mod.py``, ``text`` for unknown kinds."""
    ext = _extension(path)
    return CODE_LANGUAGES.get(ext) or PROSE_LANGUAGES.get(ext) or "text"


def is_code(path: str) -> bool:
    return _extension(path) in CODE_LANGUAGES


def is_doc(path: str) -> bool:
    p = PurePosixPath(path)
    if _extension(path) in DOC_EXTENSIONS:
        return True
    if any(part.lower() in DOC_FOLDERS for part in p.parts[:-1]):
        return True
    return p.name.lower().startswith(DOC_NAMES)


def in_preset(path: str, preset: str) -> bool:
    if preset == "mirror":
        return True
    if preset == "docs":
        return is_doc(path)
    return is_doc(path) or is_code(path)


def _vendored(folder: str, depth: int) -> bool:
    return folder in VENDORED or folder.endswith(".egg-info") or (depth == 0 and folder in TOP_VENDORED)


def _path_problem(path: str) -> tuple[str, str] | None:
    """(the path or folder to report, why) when a path is never ingested, else None."""
    parts = path.split("/")
    for i, part in enumerate(parts):
        where = "/".join(parts[: i + 1]) + ("/" if i < len(parts) - 1 else "")
        if part == ".git":
            return where, "git metadata"
        if part.startswith("."):
            return where, "hidden (Obsidian does not show dot-files)"
        if i < len(parts) - 1 and _vendored(part, i):
            return where, "vendored or generated folder"
    if parts[0] in RESERVED:
        return path, "reserved name in a snapshot"
    bad = _UNLINKABLE.search(path)
    if bad:
        return path, f"its name has {bad.group()!r}, which Obsidian cannot link to"
    if any(part != part.strip() for part in parts):
        return path, "a name starts or ends with a space"
    return None


def walk_folder(root: Path) -> tuple[list[str], list[Skipped]]:
    """Every regular file under ``root`` (POSIX, sorted); symlinks, hidden and vendored folders are not
    entered (they come back as skipped, once per folder)."""
    found: list[str] = []
    skipped: list[Skipped] = []
    for current, dirs, files in os.walk(root):
        rel = Path(current).relative_to(root).as_posix()
        prefix = "" if rel == "." else rel + "/"
        keep = []
        for d in sorted(dirs):
            if os.path.islink(os.path.join(current, d)):
                skipped.append(Skipped(prefix + d + "/", "symlink"))
            elif d == ".git":
                continue
            elif d.startswith(".") or _vendored(d, 0 if rel == "." else 1):
                problem = _path_problem(prefix + d + "/x")
                skipped.append(Skipped(prefix + d + "/", problem[1] if problem else "skipped folder"))
            else:
                keep.append(d)
        dirs[:] = keep
        for f in sorted(files):
            if os.path.islink(os.path.join(current, f)):
                skipped.append(Skipped(prefix + f, "symlink"))
            else:
                found.append(prefix + f)
    return sorted(found), skipped


def _read_problem(data: bytes) -> str | None:
    if b"\x00" in data[:65536]:
        return "binary (NUL bytes)"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "binary or not UTF-8 text"
    if "\x00" in text:
        return "binary (NUL bytes)"
    return None


def select_files(root: Path, paths: Iterable[str], preset: str) -> tuple[list[Candidate], list[Skipped], int]:
    """The files of ``paths`` (relative to ``root``) that ``preset`` ingests, those skipped with their
    reason, and how many the preset leaves out (not listed: a docs snapshot does not list the code)."""
    chosen: list[Candidate] = []
    skipped: list[Skipped] = []
    reported: set[str] = set()
    notes: dict[str, str] = {}
    excluded = 0
    for path in paths:
        problem = _path_problem(path)
        wanted = in_preset(path, preset)
        if problem is not None:  # a folder is reported once; a file only when the preset wants it
            folder = problem[0].endswith("/")
            if problem[1] != "git metadata" and problem[0] not in reported and (folder or wanted):
                reported.add(problem[0])
                skipped.append(Skipped(*problem))
            continue
        if not wanted:
            excluded += 1
            continue
        full = root / path
        if full.is_symlink() or not full.is_file():
            skipped.append(Skipped(path, "symlink" if full.is_symlink() else "not a regular file"))
            continue
        size = full.stat().st_size
        if size > MAX_BYTES:
            skipped.append(Skipped(path, f"too large ({size:,} bytes; the limit is {MAX_BYTES:,})"))
            continue
        data = full.read_bytes()
        bad = _read_problem(data)
        if bad is not None:
            skipped.append(Skipped(path, bad))
            continue
        note = path if path.endswith(".md") else path + ".md"
        if note in notes:
            skipped.append(Skipped(path, f"its note {note} would collide with {notes[note]}"))
            continue
        notes[note] = path
        language = "markdown" if path.endswith(".md") else language_of(path)
        chosen.append(Candidate(path, note, size, hashlib.sha256(data).hexdigest(), language))
    return chosen, skipped, excluded


def code_block(text: str, language: str) -> str:
    """``text`` fenced with more backticks than any run inside it, so the fence cannot close early."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{language}\n{body}{fence}\n"


_FENCE = re.compile(r"^(`{3,})[\w+#.-]*[ \t]*$", re.M)


def extract_code(note_body: str) -> str | None:
    """The text inside the first fenced block of a code note (as ``code_block`` wrote it), or None."""
    opening = _FENCE.search(note_body)
    if opening is None:
        return None
    fence = opening.group(1)
    start = opening.end() + 1
    end = note_body.rfind("\n" + fence, start - 1)
    if end < start - 1:
        return None
    return note_body[start : end + 1]
