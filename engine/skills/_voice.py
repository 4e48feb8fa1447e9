"""Voices (E12): a persona the final report may be rendered in — its wording only.

A voice is a markdown file with frontmatter (``name``, ``description``, optional ``tone``,
``verbosity`` 1–5, ``formatting``) and style instructions as its body: the package's
(``engine/skills/voices/*.md``), overridden by name from a vault's ``Shad/Skills/Voices/*.md``.

Rendering must not change claims, citations, numbers or the stop reason (seed 002 §8.4). So only the
answer part of a report is rendered (``split_report``: frontmatter, callouts and Shad's own sections stay
as they are), and ``unfaithful`` compares the rendering with the original: every wikilink and every
number the original has, as often as it has them, and nothing new. Any difference keeps the original.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..vault import is_local, parse_note
from ._skill import SkillError

__all__ = ["PACKAGE_VOICES", "Voice", "find_voice", "split_report", "unfaithful", "voice_prompt", "voices"]

PACKAGE_VOICES = Path(__file__).parent / "voices"
VAULT_VOICES = "Shad/Skills/Voices"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_LINK = re.compile(r"!?\[\[[^\[\]\n]+\]\]")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:/–-]\d+)*(?:\s?%)?")
# Sections Shad writes about the run itself: never rendered (stop reasons, gaps, diagnostics, checks).
_KEPT_SECTIONS = re.compile(
    r"^## (Not found in the vault|Missing branches|Unresolved citations|Diagnostics|Checks|Repairs|"
    r"Files|Written|Contract change requests|Gardener|Learning|Conflicts|Unsupported claims|Stopped)",
    re.M,
)


@dataclass(frozen=True)
class Voice:
    name: str
    description: str
    instructions: str
    tone: str | None = None
    verbosity: int | None = None
    formatting: str | None = None
    source: str = "package"
    path: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _voice(text: str, path: str, source: str) -> Voice:
    note = parse_note(path, text.encode("utf-8"))
    front = note.frontmatter
    name = str(front.get("name") or Path(path).stem).strip()
    if not _NAME.match(name) or not front.get("description"):
        raise SkillError(f"{path}: a voice needs a lower-case `name` and a `description`", path=path)
    verbosity = front.get("verbosity")
    return Voice(
        name=name,
        description=str(front["description"]).strip(),
        instructions=note.body.strip(),
        tone=str(front["tone"]) if front.get("tone") else None,
        verbosity=verbosity if isinstance(verbosity, int) and 1 <= verbosity <= 5 else None,
        formatting=str(front["formatting"]) if front.get("formatting") else None,
        source=source,
        path=path,
    )


def voices(vaults: list[Any] | tuple[Any, ...] = ()) -> dict[str, Voice]:
    """Every voice by name: the package's, overridden by the vaults' (the first vault wins)."""
    found: dict[str, Voice] = {}
    for file in sorted(PACKAGE_VOICES.glob("*.md")):
        v = _voice(file.read_text(encoding="utf-8"), f"engine/skills/voices/{file.name}", "package")
        found[v.name] = v
    for vault in reversed(list(vaults)):
        root = Path(vault) if isinstance(vault, (str, Path)) else (vault.root if is_local(vault) else None)
        if root is None or not (root / VAULT_VOICES).is_dir():
            continue
        for file in sorted((root / VAULT_VOICES).glob("*.md")):
            if file.is_symlink():
                continue
            try:
                v = _voice(file.read_text(encoding="utf-8"), f"{VAULT_VOICES}/{file.name}", root.name)
            except (OSError, UnicodeDecodeError, SkillError):
                continue  # a broken voice file is not offered; `find_voice` names the known ones
            found[v.name] = v
    return found


def find_voice(name: str, vaults: list[Any] | tuple[Any, ...] = ()) -> Voice:
    known = voices(vaults)
    voice = known.get(name.strip().lower())
    if voice is None:
        raise UsageError(f"no voice named {name!r}", hint=f"voices: {', '.join(sorted(known)) or 'none'}")
    return voice


def split_report(body: str) -> tuple[str, str]:
    """The report body as (answer, kept): the answer is rendered, ``kept`` (Shad's notes and sections
    about the run: callouts, gaps, diagnostics, checks) follows it unchanged."""
    match = _KEPT_SECTIONS.search(body)
    answer, kept = (body[: match.start()], body[match.start() :]) if match else (body, "")
    lines = answer.rstrip("\n").split("\n")
    cut = len(lines)
    while cut > 0 and (lines[cut - 1].startswith(">") or not lines[cut - 1].strip()):
        cut -= 1
    callout = ""
    if any(line.startswith(">") for line in lines[cut:]):  # a closing callout is Shad's note
        callout, lines = "\n".join(lines[cut:]).strip("\n"), lines[:cut]
    parts = [p for p in (callout, kept.strip("\n")) if p]
    return "\n".join(lines).rstrip() + "\n", ("\n\n".join(parts) + "\n") if parts else ""


def voice_prompt(voice: Voice, answer: str) -> str:
    style = ", ".join(
        f"{k}: {v}"
        for k, v in (("tone", voice.tone), ("verbosity", voice.verbosity), ("formatting", voice.formatting))
        if v
    )
    return (
        f"Rewrite the report below in the voice '{voice.name}' ({voice.description}"
        + (f"; {style}" if style else "")
        + f").\n\n{voice.instructions}\n\n"
        "Rules you must keep: change only wording, order and formatting. Keep every claim. Keep every "
        "wikilink exactly as written ([[...]]), as many times as it appears, next to the claim it supports. "
        "Keep every number, date and unit exactly. Add no facts, no links and no numbers. Keep the first "
        "heading. Reply with the rewritten report only.\n\n---\n"
        f"{answer}"
    )


def _numbers(text: str) -> Counter[str]:
    without_links = _LINK.sub(" ", text)
    return Counter(m.group(0).replace(" ", "") for m in _NUMBER.finditer(without_links))


def _changed(what: str, before: Counter[str], after: Counter[str], shown: int) -> str | None:
    if before == after:
        return None
    lost, added = sorted((before - after).elements()), sorted((after - before).elements())
    return (
        f"{what} changed"
        + (f"; dropped {', '.join(lost[:shown])}" if lost else "")
        + (f"; added {', '.join(added[:shown])}" if added else "")
    )


def unfaithful(original: str, rendered: str) -> list[str]:
    """What the rendering changed that a voice may not (empty: it may be used)."""
    problems = [
        _changed("citations", Counter(_LINK.findall(original)), Counter(_LINK.findall(rendered)), 3),
        _changed("numbers", _numbers(original), _numbers(rendered), 5),
    ]
    if not rendered.strip():
        problems.append("the rendering is empty")
    return [p for p in problems if p]
