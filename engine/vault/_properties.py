"""A note's properties (its YAML frontmatter) as plain text a passage can hold.

Many vaults keep their facts in properties, not in the body: a movie note's ``director``, a book's
``pages``, a place's ``coordinates``. Obsidian shows them above the body; the index puts this text at the
top of the note's first passage, so a search finds the fact, a retrieval hands it over and a citation of
the note quotes it.
"""

from __future__ import annotations

import datetime as _dt
import re
from functools import lru_cache
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
        if isinstance(value, str):  # (most values: one text)
            text = _shown_text(value, web)
            if text is not None and _kept(text, body):
                lines.append(f"{key}: {text}")
            continue
        shown = [v for v in _shown(value, web) if _kept(v, body)]
        if shown:
            lines.append(f"{key}: {', '.join(shown)}")
    return "\n".join(lines)[:MAX_CHARS].strip()


_FEW_WORDS_CHARS = 2 * PROSE_WORDS + 1  # shorter text holds at most PROSE_WORDS words


def _kept(text: str, body: str) -> bool:
    """Whether a value's ``text`` is no prose and not what the body says already."""
    return not (len(text) > 40 and text in body) and (
        len(text) < _FEW_WORDS_CHARS or len(text.split()) <= PROSE_WORDS
    )


def _shown(value: Any, web: bool = False) -> list[str]:
    if isinstance(value, str):
        text = _shown_text(value, web)
        return [] if text is None else [text]
    if isinstance(value, list):
        out: list[str] = []
        for item in value[:MAX_VALUES]:
            if isinstance(item, str):
                text = _shown_text(item, web)
                if text is not None:
                    out.append(text)
            elif not isinstance(item, (list, dict)):
                out += _shown(item, web)
        return out
    if isinstance(value, bool):
        return []  # a flag (publish, draft, mobile) is a setting; its key's word would rank the note
    if isinstance(value, (int, float, _dt.date)):
        return [value.isoformat() if isinstance(value, _dt.date) else str(value)]
    return []  # nested mappings are settings more than facts


@lru_cache(maxsize=4096)  # (values repeat from note to note: a type, a status, a rating)
def _shown_text(value: str, web: bool) -> str | None:
    text = " ".join(value.split())
    if web and _WEB.fullmatch(text):
        return text[:MAX_VALUE_CHARS]
    # (each pattern needs what is looked for first: "//" or ":" for an address, "[[" a link, "." a file)
    if not text or (("//" in text or ":" in text) and _URL.match(text)):
        return None
    if "[[" in text:
        text = _WIKILINK.sub(_link_name, text).strip()
    return text[:MAX_VALUE_CHARS] if text and not ("." in text and _FILE.search(text)) else None


def _link_name(match: re.Match[str]) -> str:
    target, alias = match.group(1).strip(), match.group(2)
    if alias and alias.strip():
        return alias.strip()
    if _FILE.search(target):
        return ""  # an attachment (a cover image), not a fact
    name = target.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name
