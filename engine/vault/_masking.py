"""Blanking what holds no link, tag, heading or block id (fenced and inline code, ``%% comments %%``),
keeping offsets and newlines, and finding what a reader of a note never sees, which the index leaves
out: comments, HTML comments, an image's address (its alt text stays) and HTML tags (their content stays).
"""

from __future__ import annotations

import re

__all__ = ["SPACES", "blank", "delimited_spans", "markup_spans", "mask_code_and_comments", "unseen"]

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[^\n]*$", re.M)
# Opens with a literal backtick (the run's first; the group holds the rest of it): the regex engine then
# jumps from one backtick to the next instead of trying the pattern at every character. The code is the
# shortest text on the line that neither starts nor ends with a backtick and is followed by a run of as
# many: it can end only before a run, so it is tried run by run, not character by character.
_INLINE_CODE = re.compile(r"(`(`*)[^`\n]+(?:`+[^`\n]+)*?`\2(?!`))")  # (the code, the run but one)


def mask_code_and_comments(body: str) -> tuple[str, list[tuple[int, int]]]:
    """Blank out fenced code, ``%% comments %%`` and inline code, keeping offsets and newlines.

    Also returns the comment spans, which the search index leaves out.
    """
    # (a character is looked for first: ``in`` finds one 20x faster than a longer string's absence)
    fenced = ("`" in body and "```" in body) or ("~" in body and "~~~" in body)
    spans = _fence_spans(body) if fenced else []
    text = blank(body, spans) if spans else body
    if "`" in text:  # before comments: "`%%`" is code, not the start of a comment
        text = _blank_inline_code(text)
    comments: list[tuple[int, int]] = []
    if "%" in text and "%%" in text:
        comments = delimited_spans(text, "%%", "%%")
        text = blank(text, comments)
    return text, comments


def _blank_inline_code(text: str) -> str:
    """``text`` with its inline code blanked: ``blank`` for spans that hold no line break, put together
    from ``split``'s pieces (the text between, the code, a group) without a match object for each."""
    pieces = _INLINE_CODE.split(text)
    if len(pieces) == 1:
        return text
    out = [""] * (len(pieces) // 3 * 2 + 1)
    out[0::2] = pieces[0::3]
    out[1::2] = map(" ".__mul__, map(len, pieces[1::3]))
    return "".join(out)


def unseen(body: str, markup: bool) -> tuple[str, str, list[tuple[int, int]]]:
    """``body`` with code and ``%% comments %%`` blanked (where links and tags are found), that with HTML
    comments blanked too (where headings are), and the spans of ``body`` a reader never sees: comments,
    HTML comments and, with ``markup``, image addresses and HTML tags (``markup_spans``)."""
    masked, hidden = mask_code_and_comments(body)
    html_comments = delimited_spans(masked, "<!--", "-->") if "<" in masked and "<!--" in masked else []
    visible = blank(masked, html_comments) if html_comments else masked
    hidden += html_comments
    if markup:
        hidden += markup_spans(visible)
    return masked, visible, hidden


def _fence_spans(body: str) -> list[tuple[int, int]]:
    """The fenced code blocks, each from its opening line to its closing line's end (or the body's end).
    An opening line is what ``_FENCE`` matches; it is looked for only where three backticks or tildes are
    (found with ``str.find``, which skips to them: the regex, anchored at a line's start, tries every
    character, and so does one looking for either mark)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    ticks = body.find("```")
    tildes = body.find("~~~")
    while ticks >= 0 or tildes >= 0:
        at = ticks if tildes < 0 or 0 <= ticks < tildes else tildes
        start = max(body.rfind("\n", 0, at) + 1, pos)
        found = None
        if at - start <= 3 and not body[start:at].strip(" \t"):
            found = _FENCE.match(body, start)
        if found is None:
            pos = at + 1
        else:
            fence = found.group(1)
            pos = _fence_end(body, found.end(), fence[0], len(fence))
            spans.append((found.start(), pos))
        if 0 <= ticks < pos:
            ticks = body.find("```", pos)
        if 0 <= tildes < pos:
            tildes = body.find("~~~", pos)
    return spans


def _fence_end(body: str, pos: int, char: str, length: int) -> int:
    """Where the fence closing a block opened by ``length`` ``char``s ends (its line's end), else the
    body's end: the first line from ``pos`` that is at most three spaces or tabs, ``length`` or more of
    ``char``, then only spaces or tabs. Found as ``re.search(rf"^[ \t]{0,3}{char}{{{length},}}[ \t]*$",
    body[pos:], re.M)`` would, but by looking for the run of ``char``s (the regex, anchored at a line's
    start, tries every character of the code block)."""
    run = char * length
    while (at := body.find(run, pos)) >= 0:
        start = body.rfind("\n", 0, at) + 1
        if start >= pos and at - start <= 3 and not body[start:at].strip(" \t"):
            end = body.find("\n", at)
            end = len(body) if end < 0 else end
            if not body[at:end].rstrip(" \t").strip(char):
                return end
        pos = at + 1
    return len(body)


def delimited_spans(text: str, opener: str, closer: str) -> list[tuple[int, int]]:
    """The spans from each ``opener`` to the ``closer`` after it (one left open runs to the end, as
    Obsidian and a browser read ``%%`` and ``<!--``), found with ``str.find``: a lazy regex steps through
    every character of a long comment."""
    spans: list[tuple[int, int]] = []
    find, skip, pos = text.find, len(opener), 0
    while (start := find(opener, pos)) >= 0:
        pos = find(closer, start + skip)
        if pos < 0:
            spans.append((start, len(text)))
            break
        pos += len(closer)
        spans.append((start, pos))
    return spans


# What ``\s`` matches, spelled out for a class: ``[^)\s]`` tries ``\s`` as a category on each character,
# a class of characters alone is looked up in a table (a long address is matched 25% faster).
SPACES = "\t-\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# An image in Markdown (its alt text is group 1) and an HTML tag, by the names notes use: "a < b > c" or a
# generic type "List<String>" in prose is not one.
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\(\s*(?:<[^>\n]+>|[^)" + SPACES + r']+)(?:\s+"[^"\n]*")?\s*\)')
_HTML_TAG = re.compile(
    r"</?(?:a|abbr|article|aside|audio|b|blockquote|br|button|center|code|del|details|div|em|figcaption|"
    r"figure|font|footer|h[1-6]|header|hr|i|iframe|img|input|ins|kbd|label|li|main|mark|nav|ol|p|picture|"
    r"pre|q|s|section|small|source|span|strong|sub|summary|sup|table|tbody|td|th|thead|tr|u|ul|video)"
    r"(?![\w-])[^<>\n]*>",
    re.I,
)


def markup_spans(text: str) -> list[tuple[int, int]]:
    """What a reader does not see of ``text`` (code and comments blanked): an image's ``![`` and
    ``](address)`` around its alt text, and HTML tags."""
    spans: list[tuple[int, int]] = []
    if "!" in text and "![" in text:
        for m in _IMAGE.finditer(text):
            spans += [(m.start(), m.start(1)), (m.end(1), m.end())]
    if "<" in text:
        spans += [m.span() for m in _HTML_TAG.finditer(text)]
    return spans


_BLANK_BYTES = bytes(10 if i == 10 else 32 for i in range(256))  # every byte a space but newlines


def blank(text: str, spans: list[tuple[int, int]]) -> str:
    parts: list[str] = []
    pos = 0
    for start, end in spans:
        segment = text[start:end]
        if "\n" not in segment:
            parts += (text[pos:start], " " * (end - start))
        elif segment.isascii():  # in C: a drawing's comment can have 100k lines
            parts += (text[pos:start], segment.encode("ascii").translate(_BLANK_BYTES).decode("ascii"))
        else:
            parts += (text[pos:start], "\n".join(" " * len(line) for line in segment.split("\n")))
        pos = end
    parts.append(text[pos:])
    return "".join(parts)
