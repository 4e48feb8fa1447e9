"""What the decision widgets (``CheckpointWidget``, ``ApprovalWidget``) share: their shipped JS and CSS
(``decision.js`` / ``decision.css`` first, then the widget's own file), the answer to the front end's
``decide`` message, and the text views next to the widget view."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

_STATIC = Path(__file__).parent / "static"


def static_text(name: str) -> str:
    """decision.<ext> followed by the widget's own ``name`` (``checkpoint.js``...): what anywidget ships."""
    shared = _STATIC / ("decision" + Path(name).suffix)
    return shared.read_text() + (_STATIC / name).read_text()


class _Decider(Protocol):
    message: str

    def decide(self, action: str, text: str, /) -> bool: ...

    def send(self, content: dict[str, Any], /) -> None: ...

    def on_msg(self, callback: Callable[[Any, Any, Any], None], /) -> None: ...


def answer_decisions(widget: _Decider, text_key: str, refusal: str) -> None:
    """Have ``widget`` handle ``{"type": "decide", "action": ..., text_key: ...}`` from a button: decide,
    then reply ``{"type": "decided" | refusal, "message": ...}``, which lets the front end enable its
    buttons again even when ``message`` did not change. Other messages are ignored."""

    def on_front_end_msg(_widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("type") != "decide":
            return
        try:
            ok = widget.decide(str(content.get("action") or ""), str(content.get(text_key) or ""))
        except Exception as exc:  # a bug or a full disk: say so, and never leave the buttons greyed out
            widget.message, ok = f"Could not record the decision ({type(exc).__name__}: {exc}).", False
        widget.send({"type": "decided" if ok else refusal, "message": widget.message})

    widget.on_msg(on_front_end_msg)


def with_text_views(
    bundle: tuple[dict[str, Any], dict[str, Any]] | None, summary: Callable[..., str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The widget view (anywidget's mime bundle) plus ``summary()`` as text and markdown, for places
    that cannot render widgets (a terminal, nbconvert)."""
    data, metadata = bundle if bundle is not None else ({}, {})
    return {**data, "text/plain": summary(), "text/markdown": summary(markdown=True)}, metadata
