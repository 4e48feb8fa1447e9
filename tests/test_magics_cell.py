"""The cell's own output for a run (``shad_magics._cell``), in real kernels: the progress line and the
report are displays replaced in place, so after Approve the cell keeps no NEEDS_HUMAN warning or report;
a kernel interrupt ends in one line with the resume command; the answer streams into the line as the
model writes it (the real ``anthropic`` SDK against the local stand-in server); counters tell done,
pruned and failed apart."""

from __future__ import annotations

import itertools
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from _checkpoint_data import COFFEE_FLAT
from _checkpoint_data import SECURITY_GOAL as GOAL
from _fake_llm import FakeLLMServer, prompt_of, well_behaved
from _notebook_helpers import execute_notebook
from jupyter_client.manager import KernelManager

from shad_magics._cell import Progress, short_count

REPO = Path(__file__).resolve().parents[1]
MIME = "application/vnd.shad.run+json"
MULTI = (
    "How long should roasted beans rest before brewing? What grind size suits a French press? "
    "How do I filter tap water for brewing?"
)
COFFEE = {
    "Resting.md": "# Resting beans\n\nRest roasted beans for three to seven days so carbon dioxide can "
    "escape before brewing. Rested beans brew an even, sweet cup without sharp gas bubbles.\n",
    "Grinding.md": "# Grinding\n\nA French press suits a coarse grind size, like sea salt; grind just "
    "before brewing with a burr grinder.\n",
    "Water.md": "# Water\n\nFilter tap water for brewing through a carbon filter jug to remove chlorine.\n",
}


@pytest.fixture
def kernel_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = dict(os.environ)
    for name in (
        "SHAD_VAULT",
        "SHAD_CHECKPOINTS",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
    ):
        env.pop(name, None)
    env["SHAD_HOME"] = str(tmp_path / "home")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    yield env


def _text(output: dict[str, Any]) -> str:
    if output.get("output_type") == "stream":
        return str(output.get("text", ""))
    if output.get("output_type") == "error":
        return "\n".join(output.get("traceback") or []) + str(output.get("evalue", ""))
    return json.dumps(output.get("data", {}), ensure_ascii=False)


# --- after Approve: nothing stale ---------------------------------------------------------------------------


def test_after_approve_the_cell_keeps_no_needs_human(
    tmp_path: Path, make_vault: Callable[..., Path], kernel_env: dict[str, str]
) -> None:
    """A real kernel under nbclient: the run pauses (explicit pause: a headless run would fail), the next
    cell approves through the checkpoint widget's decide path, and the first cell's outputs end up
    showing the finished run only: no ShadPartialWarning, no NEEDS_HUMAN banner or status left."""
    vault = make_vault(COFFEE_FLAT)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext shad_magics"),
        nbformat.v4.new_code_cell(
            f'%%shad run -o res --vault "{vault}" --provider offline --checkpoints pause --no-cache\n{GOAL}'
        ),
        nbformat.v4.new_code_cell(
            "import time\n"
            "assert res.status.value == 'NEEDS_HUMAN'\n"
            "panel = res.checkpoints\n"
            "assert panel.widgets[0].decide('approve')\n"
            "deadline = time.monotonic() + 120\n"
            "while panel.result is None and time.monotonic() < deadline:\n"
            "    time.sleep(0.05)\n"
            "print('resumed:', panel.result.status.value)"
        ),
    ]
    execute_notebook(nb, tmp_path, kernel_env)
    paused_cell, decide_cell = nb.cells[1], nb.cells[2]
    assert "resumed: PARTIAL" in _text(decide_cell.outputs[0])
    shown = "\n".join(_text(o) for o in paused_cell.outputs)
    assert "NEEDS_HUMAN" not in shown and "ShadPartialWarning" not in shown
    assert not [o for o in paused_cell.outputs if o.get("name") == "stderr"]
    (bundle,) = [o["data"][MIME] for o in paused_cell.outputs if MIME in o.get("data", {})]
    assert bundle["status"] == "PARTIAL"  # the report display now holds the resumed run
    lines = [o["data"]["text/plain"] for o in paused_cell.outputs if "shad-line" in str(o.get("transient"))]
    lines = lines or [t for o in paused_cell.outputs for t in [o.get("data", {}).get("text/plain", "")]]
    assert any(re.match(r"Shad run \S+: PARTIAL · 1/1 nodes", t) for t in lines), lines


# --- a kernel interrupt: one line ---------------------------------------------------------------------------


class Kernel:
    """A real ipykernel with the magics loaded; ``execute`` collects a cell's iopub messages."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(env=env, cwd=str(cwd))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def start(self, code: str) -> str:
        return str(self.kc.execute(code, allow_stdin=False))

    def collect(self, msg_id: str, timeout: float = 180) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = self.kc.get_iopub_msg(timeout=timeout)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return out
            out.append(msg)
        raise AssertionError("the cell never went idle")

    def run(self, code: str) -> list[dict[str, Any]]:
        return self.collect(self.start(code))

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def test_an_interrupted_run_ends_in_one_line(
    tmp_path: Path, make_vault: Callable[..., Path], kernel_env: dict[str, str]
) -> None:
    """The run waits in its first model call (the plan); the kernel is interrupted: the cell's error
    output is one line naming the status and the resume command, no KeyboardInterrupt frames."""
    vault = make_vault(COFFEE)
    arrived, release = threading.Event(), threading.Event()

    def reply(body: dict[str, Any]) -> str:
        arrived.set()
        release.wait(60)
        return well_behaved(prompt_of(body))

    with FakeLLMServer(reply=reply) as fake:
        env = dict(kernel_env, ANTHROPIC_BASE_URL=fake.base_url, ANTHROPIC_API_KEY="sk-ant-test-0000000000")
        kernel = Kernel(env, tmp_path)
        try:
            kernel.run("%load_ext shad_magics")
            msg_id = kernel.start(
                f'%%shad run --vault "{vault}" --provider anthropic --no-widget --no-code-mode\n{MULTI}'
            )
            assert arrived.wait(60), "the run never called the model"
            kernel.km.interrupt_kernel()
            messages = kernel.collect(msg_id)
        finally:
            release.set()
            kernel.close()
    errors = [m["content"] for m in messages if m["msg_type"] == "error"]
    stderr = "".join(
        m["content"]["text"]
        for m in messages
        if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"
    )
    (error,) = errors
    text = "\n".join(error["traceback"])
    assert len(text.splitlines()) + len(stderr.splitlines()) <= 3, text + stderr
    assert re.fullmatch(r"Run cancelled: PARTIAL; `%shad resume \S+`", text), text
    assert error["ename"] == "ShadRunCancelled" and "threading" not in text and "_runner" not in text


# --- streaming ----------------------------------------------------------------------------------------------


def test_the_answer_streams_into_the_cell_then_the_report_replaces_it(
    tmp_path: Path, make_vault: Callable[..., Path], kernel_env: dict[str, str]
) -> None:
    """A model that writes slowly: the cell's line shows the root's synthesis growing, piece by piece,
    before the run ends; at the end the line carries no streamed text and the report is shown below."""
    vault = make_vault(COFFEE)
    asks = [a.strip() + "?" for a in MULTI.split("?") if a.strip()]

    def reply(body: dict[str, Any]) -> str:
        prompt = prompt_of(body)
        if "Reply with JSON only" in prompt or "as valid JSON only" in prompt:
            return json.dumps({"nodes": [{"id": f"ask{i}", "task": a} for i, a in enumerate(asks)]})
        return well_behaved(prompt)

    with FakeLLMServer(reply=reply) as fake:
        fake.set_pace(0.02)
        env = dict(kernel_env, ANTHROPIC_BASE_URL=fake.base_url, ANTHROPIC_API_KEY="sk-ant-test-0000000000")
        kernel = Kernel(env, tmp_path)
        try:
            kernel.run("%load_ext shad_magics")
            messages = kernel.run(
                f'%%shad run --vault "{vault}" --provider anthropic --no-widget --no-code-mode '
                f"--no-cache\n{MULTI}"
            )
        finally:
            kernel.close()
    assert not [m for m in messages if m["msg_type"] == "error"]
    line_id = next(
        m["content"]["transient"]["display_id"]
        for m in messages
        if m["msg_type"] == "display_data" and "shad-line" in str(m["content"].get("transient"))
    )
    updates = [
        m["content"]["data"]["text/plain"]
        for m in messages
        if m["msg_type"] == "update_display_data" and m["content"]["transient"]["display_id"] == line_id
    ]
    streamed = [u.split("\n\n", 1)[1] for u in updates if "\n\n" in u]
    assert len(set(streamed)) >= 2, updates  # the text grew while the cell waited
    assert all(b.startswith(a) for a, b in itertools.pairwise(streamed))  # one growing answer
    assert "\n\n" not in updates[-1] and re.match(r"Shad run \S+: SUCCESS · \d+/\d+ nodes", updates[-1])
    (report,) = [m for m in messages if m["msg_type"] == "display_data" and MIME in m["content"]["data"]]
    assert streamed[-1].split("[[")[0].strip()[:40] in report["content"]["data"]["text/markdown"]


# --- counters -----------------------------------------------------------------------------------------------


def test_the_line_counts_done_pruned_and_failed_apart() -> None:
    progress = Progress()
    events = [
        {"type": "RUN_STARTED", "run_id": "r1"},
        *({"type": "NODE_CREATED", "node": n} for n in ("root", "a", "b", "c", "d")),
        {"type": "NODE_SUCCEEDED", "node": "a"},
        {"type": "NODE_CACHE_HIT", "node": "b"},
        {"type": "NODE_PRUNED", "node": "c"},
        {"type": "NODE_FAILED", "node": "d"},
        {"type": "LLM_CALL", "node": "a", "tokens": 3100},
    ]
    for e in events:
        progress.handle(e)
    assert progress.counts() == {"done": 2, "pruned": 1, "failed": 1, "waiting": 0, "total": 5}
    assert re.fullmatch(
        r"Shad run r1: 2/5 nodes · 1 pruned · 1 failed · 3\.1k tokens · \d+ s", progress.line()
    )
    assert [short_count(n) for n in (950, 3100, 1_250_000)] == ["950", "3.1k", "1.2M"]


def test_streamed_text_restarts_with_a_new_attempt() -> None:
    progress = Progress()
    for text, first in (("The beans ", True), ("rest a", False), ("Rest beans ", True), ("a week.", False)):
        progress.handle({"type": "SYNTHESIS_DELTA", "node": "root", "text": text, "first": first})
    assert progress.stream == "Rest beans a week."
