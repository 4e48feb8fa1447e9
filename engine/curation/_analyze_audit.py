"""Gap analysis, part 3 (opt-in, ``--llm-audit``): a model reads a summary of the vault and the topics the
runs asked about, and says how badly each topic is covered (0..1) and which notes are missing.

Only a real model audits. The offline provider (no key) is no model: the audit is then not done, its
weight is redistributed and the report says so; nothing is made up in its place.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..errors import ShadError
from ..llm import LLMRequest, Provider, Tier, checked_complete, default_provider_name, get
from ..vault import Vault

__all__ = ["AuditResult", "audit_topics", "vault_summary"]

SAMPLE_TITLES = 80
MAX_TOKENS = 2000

SYSTEM = (
    "You audit a personal Obsidian knowledge vault for gaps. You are given a summary of the vault (folders "
    "and note titles) and topics that past questions asked about, each with the questions and the notes "
    "that come closest. For each topic, judge how poorly the vault covers it: 0 means well covered, 1 "
    "means missing entirely. Answer with JSON only."
)


@dataclass
class AuditResult:
    status: str  # used | not requested | no model | failed
    provider: str | None = None
    model: str | None = None
    scores: dict[str, float] = field(default_factory=dict)  # topic name -> 0..1
    reasons: dict[str, str] = field(default_factory=dict)
    missing: list[dict[str, str]] = field(default_factory=list)  # [{"title", "why"}] the model proposes
    error: str = ""
    tokens: int = 0


def vault_summary(vault: Vault) -> dict[str, Any]:
    """Folders with their note counts and a sample of note titles: what the model reads of the vault."""
    notes = [p for p in vault.list_notes() if not p.startswith("Shad/")]
    folders = Counter(p.rsplit("/", 1)[0] if "/" in p else "(top level)" for p in notes)
    titles = [p[:-3] if p.endswith(".md") else p for p in notes[:SAMPLE_TITLES]]
    return {"notes": len(notes), "folders": dict(sorted(folders.items())), "sample_titles": titles}


def _prompt(summary: dict[str, Any], topics: list[dict[str, Any]]) -> str:
    shape = {
        "topics": [{"topic": "<topic name as given>", "gap": 0.0, "reason": "<one sentence>"}],
        "missing": [{"title": "<suggested note title>", "why": "<one sentence>"}],
    }
    return (
        "Vault summary:\n"
        + json.dumps(summary, ensure_ascii=False, indent=1)
        + "\n\nTopics the runs asked about:\n"
        + json.dumps(topics, ensure_ascii=False, indent=1)
        + "\n\nReturn JSON of exactly this shape (at most 10 items in missing):\n"
        + json.dumps(shape)
    )


def _provider(provider: Provider | str | None) -> Provider:
    if provider is None or isinstance(provider, str):
        return get(provider or default_provider_name())
    return provider


def audit_topics(
    summary: dict[str, Any], topics: list[dict[str, Any]], provider: Provider | str | None = None
) -> AuditResult:
    """Ask the model (``provider``, else the default one) to score each topic; ``no model`` with the
    offline provider, ``failed`` (with the error) when the model could not answer."""
    try:
        chosen = _provider(provider)
    except ShadError as exc:
        return AuditResult("failed", error=exc.message)
    if chosen.name == "offline":
        return AuditResult("no model", provider="offline")
    request = LLMRequest(
        "audit",
        Tier.JUDGE,
        _prompt(summary, topics),
        system=SYSTEM,
        inputs={"vault": summary, "topics": topics},
        max_tokens=MAX_TOKENS,
        expect_json=True,
    )
    try:
        response = asyncio.run(_complete(chosen, request)) if not _in_loop() else _threaded(chosen, request)
    except ShadError as exc:
        return AuditResult("failed", provider=chosen.name, error=exc.message)
    result = AuditResult("used", provider=chosen.name, model=response.model, tokens=response.total_tokens)
    _read(response.data, {t["topic"] for t in topics}, result)
    return result


async def _complete(provider: Provider, request: LLMRequest) -> Any:
    try:
        return await checked_complete(provider, request)
    finally:
        await provider.aclose()


def _in_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _threaded(provider: Provider, request: LLMRequest) -> Any:
    """Inside a running loop (Jupyter) the call gets its own loop in a worker thread."""
    import threading

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(_complete(provider, request))
        except BaseException as exc:  # handed to the caller's thread below
            box["error"] = exc

    worker = threading.Thread(target=target, name="shad-audit", daemon=True)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _read(data: Any, names: set[str], result: AuditResult) -> None:
    """The model's scores for the topics it was given (others are ignored), clamped to 0..1."""
    if not isinstance(data, dict):
        return
    for item in data.get("topics") or []:
        if not isinstance(item, dict) or str(item.get("topic")) not in names:
            continue
        try:
            gap = float(item.get("gap", 0.0))
        except (TypeError, ValueError):
            continue
        name = str(item["topic"])
        result.scores[name] = round(max(0.0, min(1.0, gap)), 3)
        result.reasons[name] = str(item.get("reason") or "")
    for item in (data.get("missing") or [])[:10]:
        if isinstance(item, dict) and str(item.get("title") or "").strip():
            result.missing.append({"title": str(item["title"]).strip(), "why": str(item.get("why") or "")})
