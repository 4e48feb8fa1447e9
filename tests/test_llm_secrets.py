"""engine.llm._secrets: what the redactor keeps out of recorded calls, and ``Redactor.loads`` (the recorder's
path) giving exactly what the full walk gives, with or without anything to redact."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.llm._secrets import REDACTED, Redactor, secret_values

SECRET = 'pa"ss\\word-0123456789'  # quotes and a backslash: JSON escapes them
CLEAN: dict[str, Any] = {
    "purpose": "answer",
    "request": {
        "system": "You are Shad.",
        "prompt": "What is first crack? It happens near 196 °C, a risk to watch.",
        "inputs": {"context": [{"path": "Roasting/First crack.md", "text": "First crack: 196 °C."}]},
    },
    "response": {"text": "Near 196 °C [[Roasting/First crack]].", "data": None, "input_tokens": 5},
}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _with(path: list[Any], leaf: Any) -> dict[str, Any]:
    """``CLEAN`` with ``leaf`` put at ``path`` (a new key or list item in a copy)."""
    data: dict[str, Any] = json.loads(json.dumps(CLEAN))
    target: Any = data
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = leaf
    return data


CASES = {
    "nothing to redact": CLEAN,
    "an environment secret, JSON-escaped in the text": _with(["request", "prompt"], f"key is {SECRET}."),
    "an Anthropic key shape": _with(["response", "text"], "sk-ant-api03-AbCdEf0123456789_xyz"),
    "an OpenAI key shape after a newline": _with(["request", "system"], "debug:\nsk-0123456789abcdefghij"),
    "a bearer token split by a tab": _with(["request", "prompt"], "Authorization: Bearer\tabcdefgh12345"),
    "a credential field deep in a list": _with(
        ["request", "inputs", "context", 0, "headers"], {"X-Api-Key": "v"}
    ),
    "a credential field ending in a newline": _with(["response", "data"], {"password\n": "hunter2hunter2"}),
    "a credential field spelled with a Kelvin sign": _with(["request", "inputs", "api_\u212aey"], "value"),
    "an empty credential field (kept)": _with(["request", "inputs", "cookie"], ""),
}


@pytest.mark.parametrize("data", CASES.values(), ids=list(CASES))
def test_loads_is_the_full_walk(data: dict[str, Any]) -> None:
    redactor = Redactor([SECRET])
    text = _canonical(data)
    assert redactor.loads(text) == redactor.obj(json.loads(text))


def test_loads_redacts_what_leaks() -> None:
    redactor = Redactor([SECRET])
    for name, data in CASES.items():
        out = _canonical(redactor.loads(_canonical(data)))
        if name in ("nothing to redact", "an empty credential field (kept)"):
            assert REDACTED not in out, name
        else:
            assert REDACTED in out, name
            assert SECRET not in json.loads(out)["request"]["prompt"], name


def test_loads_of_a_clean_record_is_a_fresh_copy() -> None:
    text = _canonical(CLEAN)
    first, second = Redactor().loads(text), Redactor().loads(text)
    assert first == CLEAN and first is not second
    first["request"]["inputs"]["context"].append("changed")  # a later change alters no other record
    assert second == CLEAN


def test_secret_values_come_from_secret_named_variables_longest_first() -> None:
    env = {"MY_API_KEY": "short-but-ok", "SERVICE_TOKEN": "a-much-longer-token-value", "HOME": "/root/xx"}
    assert secret_values(env, ["tiny", None]) == ["a-much-longer-token-value", "short-but-ok"]
