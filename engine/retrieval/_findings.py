"""What the subtasks a node builds on found, handed to that node's retrieval.

The second step of a two-step goal names what the first step found without saying it ("SPI is similar to
another protocol. In *that protocol*, which line carries the data?"): searching its own words finds the
first step's notes again, or nothing. So the script that retrieves for it is told what its dependencies
answered, and the notes they drew on are where links are followed from: the answer of a second hop is
usually one link away from the first hop's note.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Findings"]

ANSWER_CHARS = 300  # of each dependency's answer, in the script prompt
MAX_NOTES = 4  # notes of the dependencies whose links are followed, best first
NOTES_PER_DEPENDENCY = 2


@dataclass(frozen=True)
class Findings:
    """The answers of a node's finished dependencies (node id, answer) and the notes they retrieved
    ((vault, path), best first)."""

    answers: tuple[tuple[str, str], ...] = ()
    notes: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.answers or self.notes)

    @classmethod
    def of(cls, dependencies: Iterable[tuple[str, str, Mapping[str, Any]]]) -> Findings:
        """From (node id, answer, retrieval record) of each finished dependency: the record's ``context``
        items give the notes, its first items first."""
        answers: list[tuple[str, str]] = []
        notes: dict[tuple[str, str], None] = {}
        for node_id, answer, retrieval in dependencies:
            text = " ".join(answer.split())
            if text:
                answers.append((node_id, text[:ANSWER_CHARS]))
            taken = 0
            for item in retrieval.get("context") or []:
                key = (str(item.get("vault", "")), str(item.get("path", "")))
                if key[1] and key not in notes and taken < NOTES_PER_DEPENDENCY:
                    notes[key] = None
                    taken += 1
        return cls(tuple(answers), tuple(notes)[:MAX_NOTES])

    def prompt(self) -> str:
        """The lines a retrieval script's prompt gets: what to search for by name."""
        if not self.answers:
            return ""
        lines = "\n".join(f"- {node_id}: {text}" for node_id, text in self.answers)
        return (
            "What the subtasks this one builds on found (search for what they name when the subtask "
            f"refers to it):\n{lines}\n"
        )

    def to_dict(self) -> dict[str, Any]:
        return {"answers": [list(a) for a in self.answers], "notes": [list(n) for n in self.notes]}
