"""A context item's Markdown as the offline provider quotes it: ``display_text`` renders it the way Obsidian
shows it (a wikilink shows its label, ``^block`` ids and embeds are hidden; code is kept as written), so a
quoted passage never carries links the context item did not give as its citation; ``passages`` splits it
into quotable units: a list item, a table row or a sentence (headings and rules are skipped; a short code
block right after a prose line is quoted with that line as inline code, other code is skipped; a line that
introduces a short list is quoted with its items).
"""

from __future__ import annotations

import re

__all__ = [
    "BLOCK_ID",
    "CODE_SPAN",
    "MAX_PASSAGE_CHARS",
    "MIN_WORDS",
    "WIKILINK",
    "WORD",
    "display_text",
    "passages",
    "quotable_units",
    "split_sentences",
]

MIN_WORDS = 2
MAX_PASSAGE_CHARS = 500
WORD = re.compile(r"[^\W_]+", re.U)
CODE_SPAN = re.compile(r"(`+[^`\n]+?`+)")
_COMMENTS = {"%%": "%%", "<!--": "-->"}  # comment opener -> its end
# Layout tags whose content reading view shows as text; a tag named in prose ("HTML <kbd> tags") stays.
_HTML_TAG = re.compile(
    r"</?(?:a|b|br|button|center|div|em|font|i|img|mark|p|small|span|strong|sub|sup|u)(?:\s[^<>]*)?/?>", re.I
)
_MD_LINK = re.compile(r"(!?)\[([^\[\]\n]*)\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
_AUTOLINK = re.compile(r"<((?:https?|obsidian)://[^<>\s]+)>")
WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")  # group 2: target, then #heading, ^block, |alias
BLOCK_ID = re.compile(r"\s\^[A-Za-z0-9-]+\s*$")
_LIST = re.compile(r"^\s*(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d{1,3}[.)]\s+)")
_QUOTE = re.compile(r"^\s*>\s?(?:\[![^\]]*\][-+]?\s*)?")
_SENT_END = re.compile(r"(?<=[.!?])[\"”’)\]]*\s+(?=[\"“(\[*_]*[A-Z0-9])")
_ONLY_LINKS = re.compile(r"\s*(?:[-*+]\s+|\d{1,3}[.)]\s+)?(?:!?\[\[[^\[\]\n]+\]\][\s,;.·|-]*)+")
MAX_CODE_CHARS = 160  # a fenced block this short, right after a sentence, is quoted with it
MAX_TERM_WORDS = 6  # a heading this short, over a one-unit section, is quoted with the unit
_ASKING = re.compile(r"\W*(?:why|how|what|when|where|who|which)\b", re.I)
_NUMBERED = re.compile(r"^\s*\d{1,3}[.)]\s")
_BULLET = re.compile(r"^\s*[-*+]\s+\S")
MAX_LIST_ITEMS = 12  # a list this long at most, of items this short, is quoted with the line introducing it
SHORT_ITEM_WORDS = 8
_ABBREV = re.compile(
    r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|ca|no|fig|dr|mr|mrs|ms|st|jr|sr|al)\.|\b[A-Z]\.)$", re.I
)


def _link_label(m: re.Match[str]) -> str:
    if m.group(1):
        return ""  # an embed shows its content, which is not in this text
    target, _, alias = m.group(2).partition("|")
    if alias.strip():
        return alias.strip()
    path, _, anchor = target.partition("#")
    name = path.rstrip("\\").strip().rsplit("/", 1)[-1]
    anchor = anchor.strip()
    if anchor and not anchor.startswith("^"):
        return f"{name} > {anchor}" if name else anchor
    return name


def display_text(text: str) -> str:
    """Markdown as Obsidian displays it, as far as quoting cares: links become their labels; comments
    (``%% ... %%``, ``<!-- ... -->``, on one line or several) are hidden, as in reading view. Code (fenced
    blocks and `inline` spans) is shown as written: a syntax such as `![[Note#Heading]]` or `%%` is the
    answer. One output line per input line."""
    out: list[str] = []
    fenced = False
    closing: str | None = None  # the end of the comment the previous line left open
    for line in text.split("\n"):
        if closing is None and line.strip().startswith(("```", "~~~")):
            fenced = not fenced
        if closing is None and (fenced or line.strip().startswith(("```", "~~~"))):
            out.append(line)
            continue
        shown: list[str] = []
        for k, piece in enumerate(CODE_SPAN.split(line)):  # odd pieces are code spans
            if k % 2:
                shown += [] if closing else [piece]
                continue
            visible, closing = _uncommented(piece, closing)
            shown.append(_shown_links(visible))
        out.append("".join(shown))
    return "\n".join(out)


def _shown_links(text: str) -> str:
    """Links and inline HTML as reading view shows them: a wikilink by its label, a Markdown link by its
    text and web address ("GitHub (https://github.com/x)"; the address may be what was asked), an image
    not at all, an autolink by its address, a layout tag not at all (``<button>Open</button>``: "Open")."""
    text = _HTML_TAG.sub("", text)
    text = _MD_LINK.sub(_md_link_label, text)
    text = _AUTOLINK.sub(r"\1", text)
    return WIKILINK.sub(_link_label, text)


def _md_link_label(m: re.Match[str]) -> str:
    label, url = m.group(2).strip(), m.group(3)
    if m.group(1):
        return ""  # an image shows itself, not words to quote
    if not url.startswith(("http://", "https://")) or url in label:
        return label or url
    return f"{label} ({url})" if label else url


def _uncommented(text: str, closing: str | None) -> tuple[str, str | None]:
    """``text`` without its comments, inside one already open if ``closing`` (its end marker) is given;
    and the end marker of the comment it leaves open, if any."""
    kept: list[str] = []
    at = 0
    while at < len(text):
        if closing:
            end = text.find(closing, at)
            if end < 0:
                return "".join(kept), closing
            at, closing = end + len(closing), None
            continue
        starts = [(i, opener) for opener in _COMMENTS if (i := text.find(opener, at)) >= 0]
        if not starts:
            kept.append(text[at:])
            break
        start, opener = min(starts)
        kept.append(text[at:start])
        at, closing = start + len(opener), _COMMENTS[opener]
    return "".join(kept), closing


def split_sentences(text: str) -> list[str]:
    """Sentences of one line of prose; no split after an abbreviation ("e.g.", "Dr.", "J.")."""
    out: list[str] = []
    for piece in _SENT_END.split(text.strip()):
        if out and _ABBREV.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        elif piece:
            out.append(piece)
    return out


def passages(text: str) -> list[str]:
    """Quotable units of a Markdown section (see the module docstring), in order."""
    return [unit for unit, _heading, links_only, _numbered, _listed in quotable_units(text) if not links_only]


def quotable_units(text: str) -> list[tuple[str, str, bool, bool, bool]]:
    """(unit, the heading it sits under in ``text``, whether it is only links, whether it is an item of a
    numbered list, whether it is a line with the short list it introduces) for each quotable unit.
    A line of links says nothing on its own, but under a heading that names what they are ("Plate
    Boundaries": Divergent Margin, Transform Margins) the list is the answer."""
    out: list[str] = []
    under: list[str] = []
    links_only: set[int] = set()
    numbered: set[int] = set()
    listed: set[int] = set()
    heading = ""
    fenced = False
    code: list[str] = []
    prose_at: int | None = None  # the last unit, when it came from the prose line just before a fence
    section: list[int] = []  # the units under the current heading
    titled: set[int] = set()  # units already quoted with their heading
    lines = _join_short_lists(list(zip(text.split("\n"), display_text(text).split("\n"), strict=True)))
    for source, raw in lines:
        joined = isinstance(raw, _Joined)
        line = raw.strip()
        if not fenced and _ONLY_LINKS.fullmatch(source):
            label = BLOCK_ID.sub("", _LIST.sub("", line)).strip()
            if heading and label and source.strip().startswith(("-", "*", "+")):
                links_only.add(len(out))
                out.append(label)
                under.append(heading)
            continue
        if line.startswith(("```", "~~~")):
            fenced = not fenced
            if not fenced:
                if prose_at is None and not section and _short_code(code) and heading:
                    # a command right under its heading: the heading says what it is for
                    titled.add(len(out))
                    section.append(len(out))
                    out.append(f"{heading}: {_short_code(code)}")
                    under.append(heading)
                _attach_code(out, prose_at, code)
                code, prose_at = [], None
            continue
        if fenced:
            code += [line] if line else []
            continue
        if not line:
            continue
        prose_at = None
        if line.startswith("#"):
            _title_sole_unit(out, section, titled, heading)
            heading, section = line.lstrip("#").strip(), []
            continue
        if re.fullmatch(r"[-*_=|:\s]{3,}", line):
            continue
        line = BLOCK_ID.sub("", _QUOTE.sub("", line)).strip()
        if line.startswith("|") or _LIST.match(line):
            units = [_LIST.sub("", line).strip()]
        else:
            units = _with_answers(split_sentences(line))
        for unit in units:
            unit = unit.strip()
            if len(WORD.findall(unit)) >= MIN_WORDS:
                if _NUMBERED.match(line):
                    numbered.add(len(out))
                if joined:
                    listed.add(len(out))
                section.append(len(out))
                out.append(unit)
                under.append(heading)
        if units and out and out[-1] == units[-1].strip() and not line.startswith("|"):
            prose_at = len(out) - 1
    _title_sole_unit(out, section, titled, heading)
    return [(unit, under[k], k in links_only, k in numbered, k in listed) for k, unit in enumerate(out)]


def _title_sole_unit(out: list[str], section: list[int], titled: set[int], heading: str) -> None:
    """A section of one short unit under a short heading is an entry of a glossary (``### `C-a` `` /
    "Move to beginning of line"): quoted with its heading, or the quote never says what it is about."""
    if (
        len(section) != 1
        or section[0] in titled
        or not heading
        or len(WORD.findall(heading)) > MAX_TERM_WORDS
        or _ASKING.match(heading)  # "Why beans degas" asks; its answer says what it is about
    ):
        return
    k = section[0]
    if len(out[k]) <= MAX_CODE_CHARS and heading.lower().strip("`*_ ") not in out[k].lower():
        out[k] = f"{heading}: {out[k]}"


def _short_code(code: list[str]) -> str:
    """A fenced block of at most 3 short lines as inline code ("`sudo pacman -S clisp`"), else ''."""
    shown = " ".join(f"`{c}`" for c in code)
    return (
        shown if code and len(code) <= 3 and len(shown) <= MAX_CODE_CHARS and "`" not in "".join(code) else ""
    )


class _Joined(str):
    """A displayed line that ``_join_short_lists`` made of a list and the line introducing it."""


def _join_short_lists(lines: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(source, displayed) lines, with a prose line that introduces a list ("A collection of:") joined
    with the list's items when they are few and short ("A collection of: AI Model; Reasoning loop;
    Tools"): alone, the line shows nothing and its items are too short to quote or name nothing asked."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        source, raw = lines[i]
        intro = raw.strip()
        end = i + 1
        if intro.endswith(":") and not _LIST.match(raw) and not intro.startswith(("#", "|", "`", "~")):
            while end < len(lines) and _BULLET.match(lines[end][1]):
                end += 1
        items = lines[i + 1 : end]
        indents = {len(r) - len(r.lstrip()) for _, r in items}
        shown = [_LIST.sub("", r).strip() for _, r in items]
        joined = f"{intro} {'; '.join(shown)}"
        if (
            2 <= len(items) <= MAX_LIST_ITEMS
            and len(indents) == 1
            and all(len(WORD.findall(item)) <= SHORT_ITEM_WORDS for item in shown)
            and len(joined) <= MAX_PASSAGE_CHARS
        ):
            sources = "; ".join(_LIST.sub("", s).strip() for s, _ in items)
            out.append((f"{source.strip()} {sources}", _Joined(joined)))
            i = end
            continue
        out.append((source, raw))
        i += 1
    return out


# A sentence that says what can be done, and one after it that says how.
_CAN = re.compile(r"\b(?:you can|can be)\b", re.I)
_HOW_NEXT = re.compile(r"→|^(?:to do (?:so|this|that)|here'?s how)\b", re.I)


def _with_answers(sentences: list[str]) -> list[str]:
    """A question the text asks itself is quoted with the sentence after it, its answer ("*Should* one
    use Obsidian for PHI? No, as of this document's date."): alone, the answer names nothing the query
    asks for, and the question says nothing. So is a sentence that says what can be done with the one
    after it that says how, by a path through the settings or "to do so" ("You can set the button to
    open Reader in one click. In the settings go to General → Behavior → Open behavior"): alone, the
    path names nothing the query asks for either."""
    out: list[str] = []
    for sentence in sentences:
        asked = out and CODE_SPAN.sub(" ", out[-1]).rstrip(' *_"”’)').endswith("?")
        how = out and _CAN.search(out[-1]) and "→" not in out[-1] and _HOW_NEXT.search(sentence)
        if (asked or how) and len(out[-1]) + len(sentence) < MAX_PASSAGE_CHARS:
            out[-1] = f"{out[-1]} {sentence}"
        else:
            out.append(sentence)
    return out


def _attach_code(out: list[str], at: int | None, code: list[str]) -> None:
    """A short code block right after a prose line shows what that line says: quote it with it, as
    inline code ("To embed a note: `![[Internal links]]`")."""
    shown = _short_code(code)
    if at is not None and shown:
        out[at] = f"{out[at]} {shown}"
