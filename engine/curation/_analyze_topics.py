"""Gap analysis, part 2: group the asks of the recorded runs into topics.

An ask is a goal, a node's task (without its strategy-stage prefix) or a retrieval query, reduced to the
set of its salient word stems (``engine.text``: stop words out, Porter-2 stems). Two asks with the same
stems are one ask, however they were phrased or wherever they came from. Two different asks belong to
one topic when the words they share carry at least half the weight of the smaller one, each word weighted
by its inverse frequency over all asks (a word every ask shares links little), or when they share two
words or more that carry a third of it (a shared phrase such as "tea ceremony"). Linking is transitive
(union-find over the asks in a fixed order), so the grouping is deterministic. A topic is named by its
most frequent words.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..text import stem
from ._analyze_runs import NodeRecord, RunRecord, ask_terms

__all__ = ["LINK_THRESHOLD", "Ask", "Topic", "cluster", "wordings"]

LINK_THRESHOLD = 0.5  # the weighted share of the smaller ask's words two asks must share...
PAIR_THRESHOLD = 1 / 3  # ... or this share when they share two words or more ("tea ceremony")
NAME_TERMS = 3
TOPIC_TERMS = 6
# Words of how a question is put, not of what it is about: named last (still searched for coverage).
FILLER = frozenset(
    stem(w)
    for w in """long much best good better need make work like well right new often really want try
    happen difference between different compare question answer""".split()
)

Key = frozenset[str]
KINDS = ("goal", "task", "query")


@dataclass
class Ask:
    key: Key
    text: str  # the first wording seen
    words: list[str] = field(default_factory=list)  # its salient words, as typed (for searching)
    texts: list[str] = field(default_factory=list)  # every distinct wording
    runs: list[str] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)  # goal | task | query
    count: int = 0
    uses: set[tuple[str, str]] = field(default_factory=set)  # (run id, wording): each query once per run
    rank: dict[str, int] = field(default_factory=dict)  # wording -> 0 goal, 1 task, 2 query (the first)


@dataclass
class Topic:
    name: str
    terms: list[str]
    title: str  # a suggested note title: the salient words of its most asked goal or task, as typed
    asks: list[Ask]
    nodes: list[NodeRecord]
    runs: list[str]


class _Asks:
    def __init__(self) -> None:
        self.asks: dict[Key, Ask] = {}
        self.words: dict[str, Counter[str]] = defaultdict(Counter)  # stem -> surface words seen

    def add(self, text: str, run_id: str, kind: str, drop: Key = frozenset()) -> Key:
        pairs = ask_terms(text, drop)
        key: Key = frozenset(s for s, _ in pairs)
        if not key:
            return key
        for s, w in pairs:
            self.words[s][w] += 1
        ask = self.asks.get(key)
        if ask is None:
            ask = self.asks[key] = Ask(key, text.strip(), [w for _, w in pairs])
        if text.strip() not in ask.texts:
            ask.texts.append(text.strip())
        if run_id not in ask.runs:
            ask.runs.append(run_id)
        ask.kinds.add(kind)
        ask.count += 1
        ask.uses.add((run_id, text.strip()))
        rank = KINDS.index(kind)
        ask.rank[text.strip()] = min(rank, ask.rank.get(text.strip(), rank))
        return key


def cluster(runs: list[RunRecord]) -> list[Topic]:
    """The topics of these runs, each with its asks, its nodes and the runs that asked about it."""
    book = _Asks()
    order = {run.run_id: i for i, run in enumerate(runs)}
    node_key: list[tuple[NodeRecord, Key]] = []
    for run in runs:
        goal_key = book.add(run.goal, run.run_id, "goal") if run.goal else frozenset()
        for node in run.nodes:
            key = book.add(node.ask, run.run_id, "task", node.template_terms) if node.ask else frozenset()
            for q in node.queries:
                book.add(q, run.run_id, "query", node.template_terms)
            node_key.append((node, key or goal_key))
    keys = sorted(book.asks, key=lambda k: sorted(k))
    if not keys:
        return []
    df = Counter(s for k in keys for s in k)
    idf = {s: math.log(1 + len(keys) / n) for s, n in df.items()}
    groups = _link(keys, idf)

    topics: list[Topic] = []
    topic_of: dict[Key, int] = {}
    for members in groups:
        asks = [book.asks[k] for k in members]
        counts: Counter[str] = Counter()
        for a in asks:
            for s in a.key:
                counts[s] += a.count
        title_ask = _title_ask(asks)
        at = {s: i for i, s in enumerate(stem(w) for w in title_ask.words)}
        ranked = sorted(counts, key=lambda s: (s in FILLER, -counts[s], -idf[s], at.get(s, len(at)), s))
        words = [book.words[s].most_common(1)[0][0] for s in ranked]
        index = len(topics)
        for k in members:
            topic_of[k] = index
        runs_of = sorted({r for a in asks for r in a.runs}, key=order.__getitem__)  # oldest first
        name = ", ".join(words[:NAME_TERMS])
        title = " ".join(title_ask.words[:6]).capitalize()
        topics.append(Topic(name, words[:TOPIC_TERMS], title, asks, [], runs_of))
    for node, key in node_key:
        if key in topic_of:
            topics[topic_of[key]].nodes.append(node)
    return topics


def wordings(asks: list[Ask]) -> list[str]:
    """Every distinct wording of these asks: goals first, then node tasks, then retrieval queries; the
    most asked first within each."""
    ranked = sorted(asks, key=lambda a: (-len(a.runs), -a.count))
    seen: list[tuple[int, int, str]] = []
    for order, a in enumerate(ranked):
        seen += [(a.rank.get(t, 2), order, t) for t in a.texts]
    return list(dict.fromkeys(t for _, _, t in sorted(seen, key=lambda x: (x[0], x[1]))))


def _title_ask(asks: list[Ask]) -> Ask:
    """The topic's most asked goal or task (the shortest wins a tie): its words make a note title."""
    asked = [a for a in asks if a.kinds & {"goal", "task"}] or asks
    return max(asked, key=lambda a: (len(a.runs), a.count, -len(a.key)))


def _link(keys: list[Key], idf: dict[str, float]) -> list[list[Key]]:
    parent = list(range(len(keys)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    weight = [sum(idf[s] for s in k) for k in keys]
    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            shared = keys[i] & keys[j]
            if not shared:
                continue
            share = sum(idf[s] for s in shared) / min(weight[i], weight[j])
            if share >= LINK_THRESHOLD or (len(shared) >= 2 and share >= PAIR_THRESHOLD):
                a, b = find(i), find(j)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    groups: dict[int, list[Key]] = defaultdict(list)
    for i, k in enumerate(keys):
        groups[find(i)].append(k)
    return [groups[r] for r in sorted(groups)]
