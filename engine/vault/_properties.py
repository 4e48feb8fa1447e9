"""A note's properties (its YAML frontmatter) as plain text a passage can hold.

Many vaults keep their facts in properties, not in the body: a movie note's ``director``, a book's
``pages``, a place's ``coordinates``. Obsidian shows them above the body; the index puts this text at the
top of the note's first passage, so a search finds the fact, a retrieval hands it over and a citation of
the note quotes it.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

__all__ = ["properties_text"]

# Ranked through the names table already (tags, aliases) or display-only settings.
SKIPPED_KEYS = frozenset(
    {"tags", "tag", "aliases", "alias", "cssclasses", "cssclass", "position", "permalink", "image", "banner"}
)
MAX_CHARS = 600
MAX_VALUES = 12  # of one list-valued property
MAX_VALUE_CHARS = 200
# A longer value is prose (a description, a summary): the names table ranks it already, and in the
# passage it mostly repeats the note's first sentence.
PROSE_WORDS = 12

_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//|^(?:https?|file|data|obsidian):", re.I)
_WEB = re.compile(r"https?://\S+", re.I)
_WIKILINK = re.compile(r"!?\[\[([^\]|#^]*)(?:[#^][^\]|]*)?(?:\|([^\]]*))?\]\]")
_FILE = re.compile(
    r"\.(?:png|jpe?g|gif|webp|svg|bmp|avif|pdf|mp[34]|m4a|wav|ogg|webm|mov|canvas|base)$", re.I
)


def properties_text(frontmatter: dict[str, Any], body: str = "", *, web: bool = False) -> str:
    """``key: value`` lines for the properties worth searching: text, numbers, dates and links (shown
    as the linked note's name); no flags, URLs, attachments, tags, aliases or display settings, no prose
    and no text the note's ``body`` already says (a ``description`` copied from the first sentence would
    count its words twice). ``web``: web addresses too ("url: https://stephango.com/"), for a reader
    (a retrieval's context) rather than for the index, whose words they would only add noise to."""
    lines: list[str] = []
    for key, value in frontmatter.items():
        if not isinstance(key, str) or key.lower() in SKIPPED_KEYS:
            continue
        shown = [
            v for v in _shown(value, web) if not (len(v) > 40 and v in body) and len(v.split()) <= PROSE_WORDS
        ]
        if shown:
            lines.append(f"{key}: {', '.join(shown)}")
    return "\n".join(lines)[:MAX_CHARS].strip()


def _shown(value: Any, web: bool = False) -> list[str]:
    if isinstance(value, list):
        out: list[str] = []
        for item in value[:MAX_VALUES]:
            if not isinstance(item, (list, dict)):
                out += _shown(item, web)
        return out
    if isinstance(value, bool):
        return []  # a flag (publish, draft, mobile) is a setting; its key's word would rank the note
    if isinstance(value, (int, float, _dt.date)):
        return [value.isoformat() if isinstance(value, _dt.date) else str(value)]
    if not isinstance(value, str):
        return []  # nested mappings are settings more than facts
    text = " ".join(value.split())
    if web and _WEB.fullmatch(text):
        return [text[:MAX_VALUE_CHARS]]
    if not text or _URL.match(text):
        return []
    text = _WIKILINK.sub(_link_name, text).strip()
    return [text[:MAX_VALUE_CHARS]] if text and not _FILE.search(text) else []


def _link_name(match: re.Match[str]) -> str:
    target, alias = match.group(1).strip(), match.group(2)
    if alias and alias.strip():
        return alias.strip()
    if _FILE.search(target):
        return ""  # an attachment (a cover image), not a fact
    name = target.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name
