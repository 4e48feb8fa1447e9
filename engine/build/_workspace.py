"""The manifest a software run is building: files by path with the node that owns each, the contract
files (pass 1), the export index built from them, and the notes (contract change requests and the like).

A node that writes a path again replaces its own file; a node that writes a path another node owns
replaces it too (the later node had the earlier file as context), and the manifest says so in a note, so
nothing changes hands silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..output import ExportIndex, Manifest, ManifestFile, ManifestNote, build_export_index, language_of
from ._blocks import FileBlock

__all__ = ["Workspace"]

_FENCE_LANGUAGES = {"py": "python", "python3": "python", "ts": "typescript", "js": "javascript"}


def _language(block: FileBlock) -> str | None:
    """The fence's language for a file whose name says none (``bin/tool``); else the suffix decides."""
    if language_of(block.path) != "text" or not block.language:
        return None
    return _FENCE_LANGUAGES.get(block.language, block.language)


@dataclass
class Workspace:
    """Files by path in the order they first appeared; ``contract_files`` are pass 1's."""

    run_id: str = ""
    files: dict[str, ManifestFile] = field(default_factory=dict)
    contract_files: set[str] = field(default_factory=set)
    notes: list[ManifestNote] = field(default_factory=list)
    dependencies: list[str] = field(default_factory=list)
    model_written: bool = True  # False when the code came from vault notes (offline provider)

    def add_blocks(
        self, blocks: Iterable[FileBlock], node: str, notes: Iterable[str] = (), *, contract: bool = False
    ) -> list[str]:
        """Add the files of ``blocks`` as ``node``'s (citing ``notes``); returns their paths."""
        cited = tuple(notes)
        return self.add(
            [ManifestFile.make(b.path, b.content, source_nodes=[node], source_notes=cited) for b in blocks],
            contract=contract,
        )

    def add(self, files: Iterable[ManifestFile], *, contract: bool = False) -> list[str]:
        added = []
        for f in files:
            before = self.files.get(f.path)
            if before is not None and before.source_nodes[:1] != f.source_nodes[:1]:
                self.notes.append(
                    ManifestNote(
                        "replaced",
                        f"{f.path} from {', '.join(before.source_nodes)} was replaced",
                        ", ".join(f.source_nodes),
                    )
                )
            if before is not None:  # keep the history of who made it, the newest first
                nodes = tuple(dict.fromkeys((*f.source_nodes, *before.source_nodes)))
                notes = tuple(dict.fromkeys((*f.source_notes, *before.source_notes)))
                f = ManifestFile.make(
                    f.path,
                    f.content,
                    language=f.language,
                    mode=f.mode,
                    source_nodes=nodes,
                    source_notes=notes,
                )
            self.files[f.path] = f
            if contract:
                self.contract_files.add(f.path)
            added.append(f.path)
        return added

    def owner(self, path: str) -> str:
        f = self.files.get(path)
        return f.source_nodes[0] if f is not None and f.source_nodes else ""

    def owners(self) -> dict[str, str]:
        return {path: self.owner(path) for path in self.files}

    def files_of(self, node: str) -> list[str]:
        return [p for p, f in self.files.items() if node in f.source_nodes[:1]]

    def drop(self, path: str, reason: str) -> bool:
        """Take a file out of the manifest (a path that can never be written safely), saying why."""
        f = self.files.pop(path, None)
        if f is None:
            return False
        self.contract_files.discard(path)
        self.notes.append(ManifestNote("dropped", f"{path}: {reason}", ", ".join(f.source_nodes)))
        return True

    def request_change(self, node: str, detail: str) -> None:
        self.notes.append(ManifestNote("contract_change_request", detail, node))

    def open_requests(self) -> list[ManifestNote]:
        return [n for n in self.notes if n.kind == "contract_change_request"]

    def settle_requests(self, how: str) -> None:
        """Mark the open change requests as reconciled (they stay in the manifest's notes as history)."""
        self.notes = [
            ManifestNote("contract_change_reconciled", f"{n.detail} — {how}", n.node)
            if n.kind == "contract_change_request"
            else n
            for n in self.notes
        ]

    def manifest(self) -> Manifest:
        return Manifest(
            files=list(self.files.values()),
            notes=list(self.notes),
            run_id=self.run_id,
            dependencies=list(self.dependencies),
        )

    def contracts(self) -> Manifest:
        return Manifest(files=[self.files[p] for p in self.files if p in self.contract_files])

    def export_index(self) -> ExportIndex:
        """Pass 1's ground truth: the exports of the contract files (every file's, once there are no
        contracts to speak of)."""
        return build_export_index(self.contracts() if self.contract_files else self.manifest())

    def to_dict(self) -> dict[str, Any]:
        return {
            "manifest": self.manifest().to_dict(),
            "contract_files": sorted(self.contract_files),
            "model_written": self.model_written,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Workspace:
        manifest = Manifest.from_dict(data.get("manifest", {}))
        return cls(
            run_id=manifest.run_id,
            files={f.path: f for f in manifest.files},
            contract_files=set(data.get("contract_files", [])),
            notes=list(manifest.notes),
            dependencies=list(manifest.dependencies),
            model_written=bool(data.get("model_written", True)),
        )
