"""engine/vault/_frontmatter.py: simple frontmatter read by hand gives exactly what YAML gives."""

from __future__ import annotations

import datetime as dt
import itertools
import random
import re
from pathlib import Path

import pytest
import yaml
from _demo import DEMO

from engine.vault import _frontmatter
from engine.vault._frontmatter import _FRONTMATTER, _Budget, _Loader, _plain, _simple, split_frontmatter
from engine.vault._model import Diagnostic
from engine.vault._simple_frontmatter import placeholder_line

ROOT = Path(__file__).resolve().parent.parent
REAL_VAULTS = ROOT.parent / "shared" / "vaults"


def blocks(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.md")):
        text = path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")
        match = _FRONTMATTER.match(text)
        if match and match.group(1).strip():
            found.append(match.group(1))
    return found


def check_same(found: list[str]) -> int:
    fast = 0
    for block in found:
        mine = _simple(block)
        if mine is not None:
            fast += 1
            assert mine == yaml.load(block, Loader=_Loader), block
    return fast


def test_the_demo_vault_reads_the_same() -> None:
    check_same(blocks(DEMO))  # inline lists and dates: all of it goes to YAML


@pytest.mark.parametrize("name", ["obsidian-help", "obsidian-hub", "zettelkasten-dy", "kepano-obsidian"])
def test_a_real_vault_reads_the_same(name: str) -> None:
    root = REAL_VAULTS / name
    if not root.is_dir():
        pytest.skip(f"{root} is not here (../shared/vaults)")
    assert check_same(blocks(root)) > 0  # some of each vault is read by hand


@pytest.mark.parametrize(
    "block",
    [
        "title: Espresso\n",
        "tags:\n  - coffee\n  - brewing\n",
        "tags:\n- coffee\n- brew/ing\nstatus: draft\n",
        "empty:\nnext: x\n",
        "empty:\n",
        "a: one\na: two\n",
        "name: v1.2 notes (draft)\n",
        "flag: yes\n",
        "flag: No\n",
        "flag: oN\n",
        "nothing: null\n",
        "nothing: ~\n",
        "n: 12\n",
        "n: 1e3\n",
        "d: 2024-01-02\n",
        "f: .inf\n",
        "q: 'quoted'\n",
        "c: value # comment\n",
        "m: a: b\n",
        "x:  two spaces\n",
        "x: trailing \n",
        "nested:\n  key: value\n",
        "list:\n  - a\n    - b\n",
        "list:\n  - a\n - b\n",
        "yes: key\n",
        "12: key\n",
        "inline: [a, b]\n",
        "s: a  b\n",
        "- a\n- b\n",
        "tab:\tx\n",
        "url: http://x\n",
        "emph: *alias\n",
        'up: "[[Parent note]]"\n',
        'list:\n  - "[[A]]"\n  - "b: c # d"\n',
        'q: ""\n',
        'q: "a\\"b"\n',
        'q: "a\\nb"\n',
        'q: "a" # c\n',
        'q: "a"b"\n',
        'q: "tab\tinside"\n',
        'q: "line\u2028break"\n',
        "topics: []\nlast: x\n",
        "topics: [] \n",
        "topics: []\n  - a\n",
        "list:\n  - []\n",
        "speaker: \nrating:   \n",
        "tags: \n  - a\n  - b\n",
        "key:\t\n",
        "flag: true\nother: False\nthird: TRUE\n",
        "flag: tRue\n",
        "n: 7\nz: 0\n",
        "n: 007\n",
        "n: 1_000\n",
        "n: 12345678901234567890123\n",
        "n: 1:20\n",
        "n: -3\n",
        "list:\n  - 3\n  - true\n  - word\n",
        # Plain text with punctuation, URLs, dates, flow lists and other letters: read by hand or not,
        # always as YAML reads it.
        "description: Learn how to link notes, attachments, and files.\n",
        "url: https://minimal.guide/a?b=c&d=e#top\n",
        "x: a:b\n",
        "x: a:\n",
        "x: a #b\n",
        "x: a#b\n",
        "x: it's\n",
        "x: TLA+\n",
        "x: .NET Reflector\n",
        "x: 3d\n",
        "x: 1e3\n",
        "x: 0x1f\n",
        "x: 1.5\n",
        "x: @handle\n",
        "x: $money\n",
        "x: <<\n",
        "x: =\n",
        "x: ~\n",
        "x: Null\n",
        "x: a [b] {c}\n",
        "x: café crème\n",
        "x: your\xa0site\n",
        "x: a\x85b\n",
        "x: a\ufeffb\n",
        "d: 2023-09-12\n",
        "d: 2023-9-12\n",
        "d: 2023-02-30\n",
        "d: 2023-09-12 10:00\n",
        "tags: [excalidraw]\n",
        "tags: [a, b c, 3, true, no]\n",
        "tags: [ a ,b ]\n",
        "tags: [a, [b]]\n",
        "tags: [a: b]\n",
        "tags: [a, ]\n",
        "tags: [a,, b]\n",
        "tags: [a #b]\n",
        "list:\n  - [a, b]\n  - c, d\n",
        # Empty list items, as a template's ``tags:`` is left: None; a tab after the dash is YAML's error.
        "tags:\n- \npublish: true\n",
        "tags:\n  -   \n  - a\n",
        "tags:\n- \t\n",
        "tags:\n- x\n- \n",
        # Spaces after a value are not part of it.
        "desc: trailing space \n",
        "tags:\n  - a \n  - [b, c]  \n",
        'q: "x"  \nn: 5 \nd: 2024-01-02 \nb: true  \n',
        "x: y:  \n",
        "c: a #b \n",
    ],
)
def test_tricky_blocks_read_the_same_or_go_to_yaml(block: str) -> None:
    mine = _simple(block)
    if mine is not None:
        assert mine == yaml.load(block, Loader=_Loader)


def test_simple_frontmatter_never_reaches_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kw: object) -> object:
        raise AssertionError("YAML was asked")

    text = "---\ntitle: Espresso\ntags:\n  - coffee\n---\nbody\n"
    monkeypatch.setattr(yaml, "load", refuse)
    data, body, line = split_frontmatter(text, [])
    assert (data, body, line) == ({"title": "Espresso", "tags": ["coffee"]}, "body\n", 6)
    # Links in quotes, empty lists and empty values, as templates write them, are read by hand too.
    text = '---\nup: "[[Parent]]"\ntopics: []\nrating: \ntags:\n  - "[[A b]]"\n---\nbody\n'
    data, _body, _line = split_frontmatter(text, [])
    assert data == {"up": "[[Parent]]", "topics": [], "rating": None, "tags": ["[[A b]]"]}


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("description: Links, files, and more.\n", {"description": "Links, files, and more."}),
        ("url: https://minimal.guide\n", {"url": "https://minimal.guide"}),
        ("created: 2023-09-12\n", {"created": dt.date(2023, 9, 12)}),
        ("tags: [excalidraw, 3d]\n", {"tags": ["excalidraw", "3d"]}),
        (
            "aliases:\n  - Postel's Principle\n  - TLA+\n  - .NET\n",
            {"aliases": ["Postel's Principle", "TLA+", ".NET"]},
        ),
        ("about: Obsidian app’s look\n", {"about": "Obsidian app’s look"}),
        (
            "aliases:\n- Xixia\ntags:\n- \npublish: true\n",
            {"aliases": ["Xixia"], "tags": [None], "publish": True},
        ),
    ],
)
def test_common_values_are_read_by_hand(block: str, expected: dict[str, object]) -> None:
    assert _simple(block) == expected == yaml.load(block, Loader=_Loader)


def test_a_templates_bad_frontmatter_needs_no_pure_python_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """``{{date}}`` is not YAML; the fields around it are kept, and telling a too-deep block from a plain
    error (``_nests_too_deep``) takes no parse when the block has too few brackets and keys to nest."""
    text = "---\ncreated: {{date}}\ntags:\n  - journal\nmood: fine, thanks\n---\nbody\n"
    diagnostics: list[Diagnostic] = []
    expected = split_frontmatter(text, diagnostics)
    assert expected[0] == {"tags": ["journal"], "mood": "fine, thanks"}
    assert [d.code for d in diagnostics] == ["invalid_frontmatter"]

    def refuse(*_args: object, **_kw: object) -> object:
        raise AssertionError("the pure-Python YAML parser was asked")

    monkeypatch.setattr(yaml, "parse", refuse)
    again: list[Diagnostic] = []
    assert split_frontmatter(text, again) == expected
    assert again == diagnostics


def test_a_bad_block_that_nests_too_deep_is_still_refused() -> None:
    text = "---\na: " + "[" * 100 + "]" * 100 + "\nb: {{date}}\n---\nbody\n"
    diagnostics: list[Diagnostic] = []
    data, body, _line = split_frontmatter(text, diagnostics)
    assert (data, body) == ({}, "body\n")
    assert [d.code for d in diagnostics] == ["frontmatter_too_large"]


# --- the faster ways through frontmatter, checked against the plain ones ---------------------------------


def _frontmatter_texts() -> list[str]:
    rng = random.Random(3)
    pieces = ["---", "...", "\n", " ", "\t", "a: b", "-", ".", "x", "\r", "----", "--- x"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 14))) for _ in range(20_000)]
    return [("---" if i % 3 else "") + text for i, text in enumerate(texts)]


def test_the_block_is_found_where_the_one_pattern_found_it() -> None:
    for text in _frontmatter_texts():
        diagnostics: list[Diagnostic] = []
        _data, body, line = split_frontmatter(text, diagnostics)
        match = _FRONTMATTER.match(text)
        if match is None:
            assert (body, line) == (text, 1)
            assert bool(diagnostics) == bool(re.match(r"---[ \t]*\n", text))
        else:
            assert (body, line) == (text[match.end() :], text.count("\n", 0, match.end()) + 1)


TEMPLATE_LINES = [  # simple lines and placeholders, then lines that are neither
    "created: {{date}}", "last: {{title}}", "dup: {{date}}", "tags:", "  - a", "categories:",
    '  - "[[People]]"', "org: []", "url:", "rating: 7", "n: 2024-01-02", "title: Plain words ", "", "dup: 1",
    "yes: {{date}}", "a: {{ date }}", "x: {{date}} ", "k: {{a}}{{b}}", "- b", "  - ", "  - [a, b]",
    "# comment", "x: y: z", "e: [a, {{b}}]", "g: &x y", "h: *x", "  - {{date}}", "-", "? k", "tab:\tv",
    "NEL: a\x85b",
]  # fmt: skip


def _template_blocks(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    pools = [TEMPLATE_LINES[:14], TEMPLATE_LINES]
    return [
        "\n".join(rng.choice(pools[i % 2]) for _ in range(rng.randint(1, 8))) + "\n" for i in range(count)
    ]


def test_a_templates_placeholder_fails_where_yaml_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """``key: {{name}}`` is not YAML: where loading such a block fails is known without loading it."""
    blocks = _template_blocks(11, 3000)
    texts = [f"---\n{block}---\nbody\n" for block in blocks]
    fast = []
    for text in texts:
        diagnostics: list[Diagnostic] = []
        fast.append((repr(split_frontmatter(text, diagnostics)), diagnostics))
    assert sum(placeholder_line(block) is not None for block in blocks) > 300
    monkeypatch.setattr(_frontmatter, "placeholder_line", lambda block: None)
    for text, found in zip(texts, fast):
        diagnostics = []
        assert (repr(split_frontmatter(text, diagnostics)), diagnostics) == found, text


def test_simple_blocks_are_stored_as_plain_makes_them() -> None:
    found = [block for root in (DEMO, *REAL_VAULTS.glob("*")) if root.is_dir() for block in blocks(root)]
    found += ["d: 2023-09-12\nl: [2023-09-12, a]\nm:\n  - 2024-02-29\n", "a: x  \n- \nb:\n  - 3\n"]
    for block in found:
        mine = _simple(block)
        if mine is not None:
            assert _simple(block, plain=True) == _plain(mine, _Budget())


def _recovered_section_by_section(block: str) -> dict[str, object]:
    """What ``_recover_yaml`` kept before: each section read by hand or by YAML, then made plain."""
    starts = [m.start() for m in _frontmatter._TOP_LEVEL_KEY.finditer(block)] + [len(block)]
    recovered: dict[str, object] = {}
    for start, end in itertools.pairwise(starts):
        try:
            part = _simple(block[start:end])
            if part is None:
                part = yaml.load(block[start:end], Loader=_Loader)
            if isinstance(part, dict):
                recovered.update(_plain(part, _Budget()))
        except (yaml.YAMLError, RecursionError, _frontmatter._TooBig):
            continue
    return recovered


def test_a_bad_blocks_fields_are_recovered_as_before() -> None:
    for block in _template_blocks(12, 2000):
        recovered = _frontmatter._recover_yaml(block, [])
        assert repr(recovered) == repr(_recovered_section_by_section(block)), block
