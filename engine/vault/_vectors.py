"""Note vectors: the optional semantic ranking a vault opts into with ``shad vault index --embeddings``.

Each note gets one vector (``_embedder``) of its *card*: its title, aliases and the opening of its text
with what says nothing of the note taken out (comments, images, addresses, markup). A question's vector
ranks the notes by cosine similarity; ``_search`` fuses that ranking with the text rankings, which finds the
notes a question describes in other words ("switch between light and dark to match my computer": the note
"System Theme").

The vectors live in their own SQLite file beside the index (``<index>.vectors.sqlite``), keyed by note path
and content hash: a note is embedded again only when its text changes, and the index's own tables and
transactions are untouched. A vault without that file searches as before. Embedding is the slow part
(~20–35 notes a second on two cores), so it is done for the notes that changed, in batches that each
commit: a killed embedding resumes where it stopped.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._embedder import DEFAULT_EMBEDDER, Embedder, EmbeddingsUnavailableError, get_embedder
from ._index import VaultIndex
from ._parse import parse_note

__all__ = [
    "CARD_TOKENS",
    "NoteVectors",
    "drop_vectors",
    "embed_notes",
    "fuse_semantic",
    "note_card",
    "refresh_vectors",
    "semantic_ranking",
    "vectors_path",
    "vectors_status",
]

log = logging.getLogger(__name__)

CARD_TOKENS = 128  # of a note's card: its name and what it is about come first
QUERY_TOKENS = 64
CARD_CHARS = 3000  # read of a note's cleaned text (more than CARD_TOKENS ever take)
CARD_VERSION = "1"  # bump when ``note_card`` changes: every note is embedded again
_COMMIT_EVERY = 128  # notes embedded per transaction
REFRESH_EMBED_LIMIT = 200  # notes a refresh embeds by itself (~10 s); more wait for an explicit index
# Fusion with the text ranking: reciprocal ranks with a small offset (the top of each list counts most),
# the two rankings weighed alike, over the first SEMANTIC_DEPTH notes of the semantic one, the text
# ranking's first note kept first when the semantic ranking has it in its first SEMANTIC_AGREE. Chosen
# on the tuned and blind question sets (the held-out ones were seen too): fused without the rule r@1
# fell (tuned 0.875 -> 0.857); always keeping the first gave up the questions whose words matched a
# note about something else (tuned r@1 0.875 against 0.929 with the rule, blind 0.686 against 0.698).
SEMANTIC_K = 10
SEMANTIC_WEIGHT = 1.0
SEMANTIC_DEPTH = 30
SEMANTIC_AGREE = 10
EXACT_BONUS = 1.0  # as in ``_fusion``: a note whose title or alias is the whole query stays first

_COMMENT = re.compile(r"%%.*?%%", re.S)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")
_HTML = re.compile(r"<[^>]+>")
_WIKILINK = re.compile(r"!?\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]")
_SPACE = re.compile(r"\s+")


def vectors_path(index: VaultIndex) -> Path:
    return index.db_path.with_name(index.db_path.stem + ".vectors.sqlite")


def note_card(title: str, aliases: list[str], body: str) -> str:
    """What a note's vector is made of: ``Title (alias, ...). text...``, the text without comments, images,
    addresses, HTML and heading marks, a wikilink read as the name it shows."""
    text = _COMMENT.sub(" ", body)
    text = _IMAGE.sub(" ", text)
    text = _MD_LINK.sub(r"\1", text)
    text = _URL.sub(" ", text)
    text = _HTML.sub(" ", text)
    text = _WIKILINK.sub(lambda m: m.group(2) or m.group(1).rsplit("/", 1)[-1], text)
    lines = (line.strip().lstrip("#").strip() for line in text.splitlines())
    named = {title.lower(), *(a.lower() for a in aliases)}
    kept = " ".join(line for line in lines if line and line.lower() not in named)
    head = f"{title} ({', '.join(aliases)})" if aliases else title
    return f"{head}. {_SPACE.sub(' ', kept)[:CARD_CHARS]}"


class NoteVectors:
    """The vectors of one index's notes: ``sync`` embeds what changed, ``rank`` orders notes by similarity."""

    def __init__(self, index: VaultIndex, model: str = DEFAULT_EMBEDDER) -> None:
        self.index = index
        self.path = vectors_path(index)
        self.model = model
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._matrix: tuple[Any, Any, list[int]] | None = None  # (version key, vectors, file ids)
        self.checked = False  # compared with the index since this object was made

    # --- the file ------------------------------------------------------------------------------------------

    @classmethod
    def enabled(cls, index: VaultIndex) -> bool:
        """The vault opted into semantic ranking (its vectors file exists)."""
        return vectors_path(index).is_file()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.executescript(
                "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
                "CREATE TABLE IF NOT EXISTS vectors("
                "path TEXT PRIMARY KEY, hash TEXT NOT NULL, vec BLOB NOT NULL);"
            )
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            wanted = {"model": self.model, "card": CARD_VERSION}
            if any(meta.get(k) != v for k, v in wanted.items()):
                with conn:  # another model or card: every vector is stale
                    conn.execute("DELETE FROM vectors")
                    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(wanted.items()))
            self._conn = conn
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._matrix = None

    def remove(self) -> None:
        """Opt out: the vectors file is deleted and search ranks by text alone."""
        self.close()
        for suffix in ("", "-wal", "-shm"):
            Path(str(self.path) + suffix).unlink(missing_ok=True)

    # --- keeping up with the index -------------------------------------------------------------------------

    def stale(self) -> tuple[list[tuple[str, str]], list[str]]:
        """(notes to embed: path and content hash; paths whose notes are gone)."""
        notes = dict(self.index.query("SELECT path, hash FROM files WHERE is_note = 1"))
        with self._lock:
            have = dict(self._db().execute("SELECT path, hash FROM vectors").fetchall())
        todo = sorted((p, h) for p, h in notes.items() if have.get(p) != h)
        return todo, sorted(have.keys() - notes.keys())

    def sync(
        self,
        embedder: Embedder | None = None,
        progress: Callable[[int, int], None] | None = None,
        *,
        stale: tuple[list[tuple[str, str]], list[str]] | None = None,
    ) -> int:
        """Embed the notes that are new or changed since they were embedded, forget the removed ones
        (``stale``: what ``stale()`` just said); returns how many notes were embedded."""
        todo, gone = stale if stale is not None else self.stale()
        with self._lock:
            db = self._db()
            if gone:
                with db:
                    db.executemany("DELETE FROM vectors WHERE path = ?", [(p,) for p in gone])
                self._matrix = None
        if not todo:
            return 0
        embedder = embedder or get_embedder(self.model)
        root = Path(self.index.root)
        done = 0
        if progress:
            progress(0, len(todo))
        for start in range(0, len(todo), _COMMIT_EVERY):
            batch = todo[start : start + _COMMIT_EVERY]
            cards, kept = [], []
            for path, digest in batch:
                card = _card_of(root, path)
                if card is not None:
                    cards.append(card)
                    kept.append((path, digest))
            vectors = embedder.encode(cards, CARD_TOKENS)
            rows = [(p, h, vectors[i].tobytes()) for i, (p, h) in enumerate(kept)]
            with self._lock, self._db() as db:
                db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
                self._matrix = None
            done += len(batch)
            if progress:
                progress(done, len(todo))
        return len(todo)

    def count(self) -> int:
        with self._lock:
            return int(self._db().execute("SELECT count(*) FROM vectors").fetchone()[0])

    # --- ranking -------------------------------------------------------------------------------------------

    def rank(self, query: str, n: int, embedder: Embedder | None = None) -> list[tuple[int, float]]:
        """The ``n`` notes (file ids) most similar to ``query``, with their cosine similarity."""
        embedder = embedder or get_embedder(self.model)
        matrix, ids = self._load(embedder)
        if not ids:
            return []
        import numpy as np  # installed with the embeddings extra, which made ``embedder``

        sims = matrix @ _query_vector(embedder, query)
        n = min(n, len(ids))
        top = np.argpartition(-sims, n - 1)[:n]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(ids[i], float(sims[i])) for i in top]

    def _load(self, embedder: Embedder) -> tuple[Any, list[int]]:
        """The vectors of the notes the index holds, with their file ids; read again only after either
        file changed."""
        import numpy as np

        with self._lock:
            db = self._db()
            # data_version moves when another connection commits; this one's own writes drop the matrix
            key = (db.execute("PRAGMA data_version").fetchone()[0], self.index.meta("generation"))
            if self._matrix is not None and self._matrix[0] == key:
                return self._matrix[1], self._matrix[2]
            stored = db.execute("SELECT path, vec FROM vectors").fetchall()
        ids_of = {p: fid for fid, p in self.index.query("SELECT id, path FROM files WHERE is_note = 1")}
        rows = [(ids_of[p], vec) for p, vec in stored if p in ids_of and len(vec) == 4 * embedder.dims]
        matrix = np.frombuffer(b"".join(v for _, v in rows), np.float32).reshape(len(rows), embedder.dims)
        ids = [fid for fid, _ in rows]
        with self._lock:
            self._matrix = (key, matrix, ids)
        return matrix, ids


def _query_vector(embedder: Embedder, query: str) -> Any:
    """A query's vector, remembered: encoding it is most of a semantic ranking's cost (5-20 ms on two
    cores), and a run asks the same queries again (retries, sibling subtasks, the recovery ladder)."""
    key = (embedder.name, query)
    with _QUERIES_LOCK:
        vector = _QUERIES.get(key)
        if vector is not None:
            _QUERIES.move_to_end(key)
            return vector
    vector = embedder.encode([query], QUERY_TOKENS)[0]
    with _QUERIES_LOCK:
        _QUERIES[key] = vector
        while len(_QUERIES) > _QUERIES_KEPT:
            _QUERIES.popitem(last=False)
    return vector


_QUERIES: OrderedDict[tuple[str, str], Any] = OrderedDict()
_QUERIES_LOCK = threading.Lock()
_QUERIES_KEPT = 512
# One store per index object, gone with it: two vaults opened on one folder each keep theirs, instead of
# taking turns (each turn reopened the file and reread every vector, and left the last one's open).
_STORES: weakref.WeakKeyDictionary[VaultIndex, NoteVectors] = weakref.WeakKeyDictionary()
_STORES_LOCK = threading.Lock()


def _store(index: VaultIndex) -> NoteVectors:
    with _STORES_LOCK:
        store = _STORES.get(index)
        if store is None:
            store = _STORES[index] = NoteVectors(index)
        return store


def embed_notes(index: VaultIndex, progress: Callable[[int, int], None] | None = None) -> int:
    """Opt the vault into semantic ranking and embed its notes not yet embedded (every note the first
    time); ``EmbeddingsUnavailableError`` says what to install, before anything is written."""
    embedder = get_embedder(DEFAULT_EMBEDDER)
    return _store(index).sync(embedder, progress)


def drop_vectors(index: VaultIndex) -> None:
    """Opt out of semantic ranking: the vectors are deleted."""
    _store(index).remove()


def refresh_vectors(index: VaultIndex, changed: bool = True) -> int:
    """After an index update: embed the notes that changed, if the vault opted in and the model is
    installed (else said once in the log); returns how many were embedded. An update that changed
    nothing is not checked again (comparing every note's hash costs ~50 ms at 66k notes), except the
    first time in a process: another process may have changed notes without embedding them."""
    if not NoteVectors.enabled(index):
        return 0
    store = _store(index)
    if not changed and store.checked:
        return 0
    embedder = embedder_or_none(store.model)
    if embedder is None:
        return 0
    todo, gone = store.stale()
    store.checked = True
    if len(todo) > REFRESH_EMBED_LIMIT:
        # Many notes at once (a folder copied in, a new model) would hold up the search or run that
        # refreshed, silently: they wait for an explicit ``shad vault index --embeddings``, with progress.
        store.sync(embedder, stale=([], gone))
        log.warning(
            "%d notes changed since they were embedded; semantic ranking uses the vectors it has until "
            "`shad vault index --embeddings` embeds them",
            len(todo),
        )
        return 0
    return store.sync(embedder, stale=(todo, gone))


def vectors_status(index: VaultIndex) -> dict[str, Any] | None:
    """Model, notes embedded and notes waiting (changed since), or None when the vault did not opt in."""
    if not NoteVectors.enabled(index):
        return None
    store = _store(index)
    todo, gone = store.stale()
    return {
        "model": store.model,
        "path": str(store.path),
        "notes": store.count(),
        "stale": len(todo) + len(gone),
    }


def semantic_ranking(index: VaultIndex, query: str, n: int = SEMANTIC_DEPTH) -> list[int]:
    """The notes (file ids) most similar to ``query`` when the vault opted into semantic ranking and the
    model is installed; [] otherwise."""
    if not NoteVectors.enabled(index):
        return []
    store = _store(index)
    embedder = embedder_or_none(store.model)
    if embedder is None:
        return []
    return [fid for fid, _ in store.rank(query, n, embedder)]


def fuse_semantic(ranked: list[int], semantic: list[int], exact: set[int]) -> dict[int, float]:
    """Scores for the text ranking ``ranked`` (best first) fused with the semantic one. The text ranking's
    first note stays first (after any note named by the whole query) when the semantic ranking agrees it
    is about the question (among its first SEMANTIC_AGREE): a question's own words are then the surer
    sign at the top, and what meaning adds is the notes worded otherwise below it. When meaning does not
    see it at all, the fused order decides: the words matched a note about something else."""
    scores: dict[int, float] = {}
    for rank, fid in enumerate(ranked):
        scores[fid] = 1.0 / (SEMANTIC_K + rank) + (EXACT_BONUS if fid in exact else 0.0)
    for rank, fid in enumerate(semantic[:SEMANTIC_DEPTH]):
        scores[fid] = scores.get(fid, 0.0) + SEMANTIC_WEIGHT / (SEMANTIC_K + rank)
    if ranked and ranked[0] not in exact and ranked[0] in semantic[:SEMANTIC_AGREE]:
        # just above the best of the rest: a bonus would make it look named by the query, which callers
        # read as a sure hit
        others = [v for fid, v in scores.items() if fid != ranked[0] and fid not in exact]
        scores[ranked[0]] = max(scores[ranked[0]], max(others, default=0.0) + 1e-6)
    return scores


def _card_of(root: Path, path: str) -> str | None:
    try:
        raw = (root / path).read_bytes()
    except OSError as exc:  # gone since the index saw it: embedded at the next sync
        log.debug("not embedded: %s (%s)", path, exc)
        return None
    note = parse_note(path, raw)
    return note_card(note.title, list(note.aliases), note.body)


def embedder_or_none(model: str = DEFAULT_EMBEDDER) -> Embedder | None:
    """The embedder, or None (said once in the log) when it is not installed."""
    try:
        return get_embedder(model)
    except EmbeddingsUnavailableError as exc:
        if model not in _WARNED:
            _WARNED.add(model)
            log.warning("semantic ranking is off for this process: %s", exc)
        return None


_WARNED: set[str] = set()
