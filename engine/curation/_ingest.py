"""Ingest (C1): bring a folder, a git repository or a git URL into the vault as an immutable snapshot
``Sources/<domain>/<source_id>/<YYYY-MM-DD>/``, every note stamped with its provenance, and record it in
the shadow index. Ingesting is a hard-safety checkpoint: nothing is written before consent (``yes`` or a
``confirm`` callback that sees the plan), and an unchanged revision writes nothing at all."""

from __future__ import annotations

import contextlib
import hashlib
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import UsageError, VaultNotFoundError
from ..vault import VaultWriter, WriteRefusedError, parse_note
from ._audit import logged
from ._git import SourceSpec, clone, resolve_source, tracked_files
from ._select import PRESETS, Candidate, Skipped, code_block, select_files, walk_folder
from ._sources import ShadowIndex, SnapshotRecord, SourceRecord

__all__ = ["ConsentRequired", "IngestPlan", "IngestResult", "ingest", "wikilink"]

SOURCES_FOLDER = "Sources"
ACTOR = "shad ingest"
_DOMAIN = re.compile(r"^[a-z0-9][a-z0-9.-]{0,62}$")


class ConsentRequired(UsageError):
    """Ingesting writes into the vault: it needs ``yes`` (``--yes``) or a person's confirmation.
    ``files`` and ``destination`` say what would have been written."""


def wikilink(note_path: str, label: str | None = None) -> str:
    """``[[Sources/local/x/2026-11-25/pkg/mod.py|pkg/mod.py]]``: the full vault path without ``.md``."""
    target = note_path[:-3] if note_path.endswith(".md") else note_path
    return f"[[{target}|{label}]]" if label else f"[[{target}]]"


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


@dataclass
class IngestPlan:
    """What an ingest would write, computed before anything is written (the consent shows it)."""

    spec: SourceSpec
    source_id: str
    vault: Path
    preset: str
    revision: str
    root: Path  # where the files are read: the folder itself or a temporary clone
    files: list[Candidate]
    skipped: list[Skipped]
    excluded: int  # files the preset leaves out
    destination: str  # vault-relative snapshot folder
    snapshot_id: str
    pinned: str | None = None
    unchanged: SnapshotRecord | None = None

    def describe(self) -> str:
        return (
            f"{len(self.files)} file{'s' if len(self.files) != 1 else ''} of {self.spec.url} "
            f"(revision {self.revision[:19]}, preset {self.preset}) into {self.vault / self.destination}"
        )


@dataclass
class IngestResult:
    snapshot_id: str
    source_id: str
    path: str  # vault-relative snapshot folder
    files: int
    skipped: list[Skipped]
    revision: str
    unchanged: bool
    source_url: str
    vault: str
    preset: str
    excluded: int = 0
    notes: list[str] = field(default_factory=list)  # vault paths written (the index note included)
    symbols: dict[str, Any] | None = None  # the enrich result of a deep ingest

    @property
    def message(self) -> str:
        if self.unchanged:
            return f"unchanged: snapshot {self.snapshot_id} already holds revision {self.revision}"
        return f"ingested {self.files} files of {self.source_url} as {self.snapshot_id} in {self.path}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "snapshot_id": self.snapshot_id,
            "source_id": self.source_id,
            "path": self.path,
            "files": self.files,
            "skipped": [s.to_dict() for s in self.skipped],
            "revision": self.revision,
            "unchanged": self.unchanged,
            "source_url": self.source_url,
            "vault": self.vault,
            "preset": self.preset,
            "excluded": self.excluded,
            "notes": self.notes,
            "symbols": self.symbols,
            "message": self.message,
        }


def ingest(
    target: str,
    vault: str | Path,
    *,
    preset: str = "docs",
    domain: str | None = None,
    yes: bool = False,
    confirm: Callable[[IngestPlan], bool] | None = None,
    index: ShadowIndex | None = None,
) -> IngestResult:
    """Ingest ``target`` into ``vault``. Without ``yes``, ``confirm(plan)`` must return True; with
    neither, ``ConsentRequired`` is raised (after planning: it says how many files and where), and
    nothing is written in either case."""
    index = index or ShadowIndex()
    with plan_ingest(target, vault, preset=preset, domain=domain, index=index) as plan:
        if plan.unchanged is not None:
            snap = plan.unchanged
            return IngestResult(
                snap.id, plan.source_id, snap.path, snap.files, plan.skipped, snap.revision, True,
                plan.spec.url, str(plan.vault), snap.preset, plan.excluded,
            )  # fmt: skip
        if not yes:
            if confirm is None:
                raise ConsentRequired(
                    f"ingesting writes {plan.describe()}",
                    hint="pass --yes to ingest (nothing was written)",
                    files=len(plan.files),
                    destination=str(plan.vault / plan.destination),
                )
            if not confirm(plan):
                raise UsageError("ingest declined: nothing was written")
        return _write(plan, index)


@contextlib.contextmanager
def plan_ingest(
    target: str,
    vault: str | Path,
    *,
    preset: str = "docs",
    domain: str | None = None,
    index: ShadowIndex | None = None,
    now: datetime | None = None,
) -> Iterator[IngestPlan]:
    """The plan of an ingest; a git source stays cloned (in a temporary folder) while the plan is open."""
    if preset not in PRESETS:
        raise UsageError(f"unknown preset {preset!r}", hint=f"presets: {', '.join(PRESETS)}")
    vault_root = Path(vault).expanduser()
    if not vault_root.is_dir():
        raise VaultNotFoundError(f"vault folder not found: {vault_root}", hint="pass --vault with your vault")
    vault_root = vault_root.resolve()
    spec = resolve_source(target)
    if spec.local_path is not None and _inside(spec.local_path, vault_root):
        raise UsageError(
            f"{spec.local_path} and the vault {vault_root} overlap (one is inside the other)",
            hint="ingest a folder outside the vault",
        )
    if domain is not None:
        domain = domain.strip().lower()
        if not _DOMAIN.match(domain):
            raise UsageError(
                f"bad --domain {domain!r}", hint="letters, digits, dots and dashes, e.g. github.com"
            )
    index = index or ShadowIndex()
    existing = index.find_source(spec.url, str(vault_root))
    pinned = existing.pinned_revision if existing else None
    source_id = index.new_source_id(spec.name, spec.url, str(vault_root))
    with contextlib.ExitStack() as stack:
        if spec.clone_url is not None:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="shad-ingest-")))
            root = tmp / "repo"
            revision = clone(spec.clone_url, root, revision=pinned)
            files, skipped, excluded = select_files(root, tracked_files(root), preset)
        else:
            assert spec.local_path is not None
            root = spec.local_path
            paths, skipped = walk_folder(root)
            files, more, excluded = select_files(root, paths, preset)
            skipped += more
            revision = "sha256:" + _manifest_hash(files)
            if pinned is not None and pinned != revision:
                raise UsageError(
                    f"source {source_id} is pinned at {pinned}; the folder now holds {revision}",
                    hint=f"unpin it to ingest the folder as it is: shad sources pin {source_id} --clear",
                )
        if not files:
            raise UsageError(
                f"nothing to ingest from {spec.url} with preset {preset}",
                hint="try --preset mirror" if preset != "mirror" else "the source holds no text files",
            )
        latest = existing.latest if existing else None
        unchanged = latest if latest and latest.revision == revision and latest.preset == preset else None
        day = (now or _now()).strftime("%Y-%m-%d")
        snap_domain = domain or spec.domain
        destination, snapshot_id = _free_folder(vault_root, snap_domain, source_id, day, index)
        yield IngestPlan(
            spec, source_id, vault_root, preset, revision, root, files, skipped, excluded,
            destination, snapshot_id, pinned, unchanged,
        )  # fmt: skip


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents or path in root.parents


def _manifest_hash(files: list[Candidate]) -> str:
    digest = hashlib.sha256()
    for f in sorted(files, key=lambda c: c.path):
        digest.update(f"{f.path}\0{f.sha256}\n".encode())
    return digest.hexdigest()


def _free_folder(vault: Path, domain: str, source_id: str, day: str, index: ShadowIndex) -> tuple[str, str]:
    """The first ``<day>``, ``<day>-2`` ... folder free in the vault and in the index."""
    taken = index.snapshot_ids()
    n = 1
    while True:
        suffix = "" if n == 1 else f"-{n}"
        folder = f"{SOURCES_FOLDER}/{domain}/{source_id}/{day}{suffix}"
        snapshot_id = f"{source_id}@{day}{suffix}"
        if not (vault / folder).exists() and snapshot_id not in taken:
            return folder, snapshot_id
        n += 1


def _plain(value: Any) -> Any:
    """Frontmatter read from a file as plain YAML-writable values."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return value
    return str(value)


def _write(plan: IngestPlan, index: ShadowIndex) -> IngestResult:
    writer = VaultWriter(
        plan.vault,
        role="person",
        actor=ACTOR,
        on_write=logged(plan.vault, f"ingest of {plan.spec.url}", "person"),
    )
    moment = _now()
    provenance = {
        "source_url": plan.spec.url,
        "source_type": plan.spec.type,
        "ingested_at": _iso(moment),
        "source_revision": plan.revision,
        "snapshot_id": plan.snapshot_id,
        "source_id": plan.source_id,
    }
    written: list[str] = []
    done: list[Candidate] = []
    skipped = list(plan.skipped)
    for f in plan.files:
        data = (plan.root / f.path).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        stamp = {**provenance, "content_hash": f"sha256:{digest}", "source_path": f.path}
        note_path = f"{plan.destination}/{f.note}"
        text = data.decode("utf-8")
        if f.is_markdown:
            parsed = parse_note(f.note, data)
            front = {"type": "source", **_plain(parsed.frontmatter), **stamp}
            body = parsed.body
        else:
            front = {"type": "source", **stamp, "language": f.language}
            body = f"# {f.path}\n\n{code_block(text, f.language)}"
        try:
            note = writer.write_note(note_path, body, front)
        except WriteRefusedError as exc:  # one refused file does not lose the snapshot
            skipped.append(Skipped(f.path, f"refused by the vault writer: {exc.message}"))
            continue
        written.append(note.path)
        done.append(f)
    if not done:
        raise UsageError(
            f"the vault writer refused every file of {plan.spec.url}", hint="see the skipped list"
        )
    index_note = f"{plan.destination}/_snapshot.md"
    manifest = "sha256:" + _manifest_hash(done)
    front = {
        "type": "snapshot",
        **provenance,
        "content_hash": manifest,
        "source_path": "",
        "preset": plan.preset,
    }
    front["files"] = len(done)
    writer.write_note(index_note, _snapshot_body(plan, done, skipped, provenance["ingested_at"]), front)
    written.append(index_note)
    source = SourceRecord(
        plan.source_id, plan.spec.url, plan.spec.type, plan.spec.domain, str(plan.vault), "manual",
        plan.pinned, plan.preset, provenance["ingested_at"],
    )  # fmt: skip
    snapshot = SnapshotRecord(
        plan.snapshot_id, plan.source_id, plan.revision, plan.destination, provenance["ingested_at"],
        len(done), plan.preset, True,
    )  # fmt: skip
    index.record(source, snapshot)
    result = IngestResult(
        plan.snapshot_id, plan.source_id, plan.destination, len(done), skipped, plan.revision, False,
        plan.spec.url, str(plan.vault), plan.preset, plan.excluded, written,
    )  # fmt: skip
    if plan.preset == "deep":
        from ._enrich import enrich_folder

        result.symbols = enrich_folder(plan.vault, plan.destination, deep=True).to_dict()
        result.notes += result.symbols["notes"]
    return result


def _snapshot_body(plan: IngestPlan, files: list[Candidate], skipped: list[Skipped], when: str) -> str:
    lines = [
        f"# Snapshot {plan.snapshot_id}",
        "",
        f"- Source: {plan.spec.url} ({plan.spec.type})",
        f"- Revision: `{plan.revision}`",
        f"- Ingested: {when} with preset `{plan.preset}`",
        f"- Files: {len(files)}; skipped: {len(skipped)}; left out by the preset: {plan.excluded}",
        "",
        "## Files",
        "",
    ]
    lines += [f"- {wikilink(f'{plan.destination}/{f.note}', f.path)}" for f in files]
    if skipped:
        lines += ["", "## Skipped", ""]
        lines += [f"- `{_shown(s.path)}`: {_shown(s.reason)}" for s in skipped]
    return "\n".join(lines) + "\n"


def _shown(text: str) -> str:
    """A path or reason safe inside inline code on one line (no stray ``[[`` for the writer to refuse)."""
    return " ".join(text.replace("`", "'").replace("[[", "[ [").replace("]]", "] ]").split())
