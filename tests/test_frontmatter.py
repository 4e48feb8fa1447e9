"""engine/vault/_frontmatter.py: simple frontmatter read by hand gives exactly what YAML gives."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from _demo import DEMO

from engine.vault._frontmatter import _FRONTMATTER, _Loader, _simple, split_frontmatter

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
