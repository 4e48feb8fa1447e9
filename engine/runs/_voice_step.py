"""``--voice NAME`` (E12): the final report's answer rewritten in a persona, after the report is written.

Only the answer part is rendered (``engine.skills.split_report``): the frontmatter (status, stop reason),
Shad's note on how the answer was made and its sections about the run stay exactly as they were. The
rendering is used only when it keeps every citation and number (``unfaithful``); otherwise the original
stays, with a warning in the report. Either way the summary says what happened (``summary["voice"]``),
the original is kept as ``artifacts/report.unvoiced.md`` and the model call is in the replay manifest."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..errors import ShadError, UsageError
from ..llm import LLMRequest, Tier
from ..skills import find_voice, split_report, unfaithful, voice_prompt

if TYPE_CHECKING:
    from ._context import RunContext
    from ._model_calls import ModelCalls

__all__ = ["apply_voice", "check_voice"]

NO_MODEL = ("offline",)  # providers that cannot render a voice (replay can: it replays the call)


def check_voice(name: str | None, provider: str, vaults: Any) -> None:
    """Before the run starts: the voice exists, and a model is there to render it."""
    if not name:
        return
    find_voice(name, vaults)
    if provider in NO_MODEL:
        raise UsageError(
            f"--voice {name} needs a language model to render the report, and this run has none "
            "(the offline provider)",
            hint="set ANTHROPIC_API_KEY (or --provider), or run without --voice",
        )


def _split_front(report: str) -> tuple[str, str]:
    if report.startswith("---\n"):
        end = report.find("\n---\n", 4)
        if end != -1:
            return report[: end + 5], report[end + 5 :]
    return "", report


def _default_voice(ctx: RunContext, root: Any) -> str | None:
    """The ``default_voice`` of the root's primary skill, when it names a voice that exists."""
    skills, routing = ctx.skills.open(), ctx.skills.routes.get(root.id)
    if routing is None or routing.primary is None:
        return None
    wanted = skills.get(routing.primary).default_voice
    try:
        return find_voice(wanted, ctx.vaults.vaults).name if wanted else None
    except UsageError:
        return None  # a skill naming a voice nobody has: the neutral report


async def apply_voice(ctx: RunContext, calls: ModelCalls) -> None:
    """Render the written report in ``config.voice``; keep the original when the rendering is unfaithful."""
    run = ctx.run
    root = run.dag.root() if len(run.dag) else None
    name, chosen_by = ctx.config.voice, "--voice"
    if not name and root is not None and ctx.provider.name not in NO_MODEL:
        name, chosen_by = _default_voice(ctx, root), "the skill's default_voice"
    if not name or not run.report or root is None:
        return
    voice = find_voice(name, ctx.vaults.vaults)
    front, body = _split_front(run.report)
    answer, kept = split_report(body)
    outcome: dict[str, Any] = {
        "name": voice.name,
        "source": voice.source,
        "chosen_by": chosen_by,
        "applied": False,
    }
    request = LLMRequest(
        "voice",
        Tier.WORKER,
        voice_prompt(voice, answer),
        system="You rewrite reports in a requested voice without changing any fact, link or number.",
        inputs={"voice": voice.name, "answer": answer},
        max_tokens=max(800, min(6000, len(answer) // 2)),
        node_id="root",
    )
    try:
        rendered = (await calls.call(root, request)).text.strip() + "\n"
    except ShadError as exc:  # a budget or the provider said no: the neutral report stands
        outcome["reason"] = f"not rendered: {exc.message}"
    else:
        problems = unfaithful(answer, rendered)
        if problems:
            outcome["reason"] = "kept the original: the rendering " + "; ".join(problems)
        else:
            outcome["applied"] = True
    history = run.history
    if outcome["applied"]:
        await asyncio.to_thread(history.write_text, "artifacts/report.unvoiced.md", run.report)
        run.report = front + rendered.rstrip() + "\n" + ("\n" + kept if kept else "")
    else:
        warning = f"> [!warning] Voice {voice.name!r}: {outcome['reason']}."
        run.report = front + answer.rstrip() + "\n\n" + warning + "\n" + ("\n" + kept if kept else "")
    summary = dict(run.summary or {})
    summary["voice"] = outcome
    metrics = dict(summary.get("metrics", {}))
    metrics["total_tokens"] = calls.tokens_spent()
    metrics["llm_calls"] = run.llm_calls
    summary["metrics"] = metrics
    run.summary = summary
    await asyncio.to_thread(history.write_text, "final.report.md", run.report)
    await asyncio.to_thread(history.write_json, "final.summary.json", summary)
    await asyncio.to_thread(ctx.provider.write, history.dir / "replay" / "manifest.json")
