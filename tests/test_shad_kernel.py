"""The ``shad`` kernel as Jupyter sees it: a real kernel process started from a kernelspec installed into a
temporary prefix, driven over the messaging protocol (``jupyter_kernel_test`` conformance, goal cells,
interrupts, failures)."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import jupyter_kernel_test
import pytest
from _demo import DEMO
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

import shad_kernel

REPO = Path(__file__).resolve().parents[1]
RUN_MIME = "application/vnd.shad.run+json"
GOAL_TIMEOUT = 180


def kernel_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The kernel's environment: no model keys (the offline provider), a private SHAD_HOME and IPython dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "SHAD_"))}
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        SHAD_HOME=str(tmp / "shad-home"),
        IPYTHONDIR=str(tmp / "ipython"),
        **extra,
    )
    return env


def start_shad_kernel(tmp: Path, env: dict[str, str]) -> tuple[KernelManager, BlockingKernelClient]:
    """Install the kernelspec into ``tmp/prefix`` and start a kernel from it, as Jupyter would."""
    kernel_dir = shad_kernel.install(prefix=tmp / "prefix")
    specs = KernelSpecManager(kernel_dirs=[str(kernel_dir.parent)])
    km = KernelManager(kernel_name="shad", kernel_spec_manager=specs)
    km.start_kernel(env=env, cwd=str(tmp))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    return km, kc


Outputs = list[dict[str, Any]]


def execute(kc: BlockingKernelClient, code: str, timeout: float = 60) -> tuple[dict[str, Any], Outputs]:
    """Run ``code``; return the execute reply's content and the iopub messages of that request."""
    msg_id = kc.execute(code)
    reply = kc.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=timeout)
    outputs: Outputs = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
        outputs.append(msg)
    return reply["content"], outputs


def results(outputs: Outputs) -> list[str]:
    return [m["content"]["data"]["text/plain"] for m in outputs if m["msg_type"] == "execute_result"]


def last_input(kc: BlockingKernelClient) -> str:
    msg_id = kc.history(hist_access_type="tail", n=1, raw=True, output=False)
    reply = kc.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg_id
    return str(reply["content"]["history"][-1][2])


class TestShadKernelConformance(jupyter_kernel_test.KernelTests):
    """The Jupyter messaging protocol, message by message, as for any Python kernel."""

    kernel_name = "shad"
    language_name = "python"
    file_extension = ".py"
    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"
    completion_samples = ({"text": "zi", "matches": {"zip"}},)
    complete_code_samples = ("1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n")
    incomplete_code_samples = ("print('''hello", "def f(x):\n  x*2")
    invalid_code_samples = ("import = 7q",)
    code_page_something = "zip?"
    code_generate_error = "raise ValueError('oops')"
    code_execute_result = (
        {"code": "1+2+3", "result": "6"},
        {"code": "[n*n for n in range(1, 4)]", "result": "[1, 4, 9]"},
    )
    code_display_data = (
        {
            "code": "from IPython.display import HTML, display; display(HTML('<b>hi</b>'))",
            "mime": "text/html",
        },
        {"code": "from IPython.display import Math, display; display(Math('x^2'))", "mime": "text/latex"},
    )
    code_history_pattern = "1?2*"
    supported_history_operations = ("tail", "search")  # IPython reports range hits as session 0
    code_inspect_sample = "zip"
    code_clear_output = "from IPython.display import clear_output; clear_output()"

    _tmp: tempfile.TemporaryDirectory[str]

    @classmethod
    def setUpClass(cls) -> None:
        cls._tmp = tempfile.TemporaryDirectory(prefix="shad-kernel-test-")
        tmp = Path(cls._tmp.name)
        cls.km, cls.kc = start_shad_kernel(tmp, kernel_env(tmp))

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        cls._tmp.cleanup()

    def test_kernel_info_names_the_kernel_and_states_the_rule(self) -> None:
        self.flush_channels()
        self.kc.kernel_info()
        reply = self.kc.get_shell_msg(timeout=30)["content"]
        assert reply["implementation"] == "shad"
        assert reply["language_info"]["name"] == "python"
        assert reply["language_info"]["codemirror_mode"]["name"] == "ipython"
        assert shad_kernel.RULE in reply["banner"]

    def test_python_cells_run_as_python(self) -> None:
        self.flush_channels()
        assert execute(self.kc, "answer = 41")[0]["status"] == "ok"
        reply, outputs = execute(self.kc, "answer + 1")
        assert reply["status"] == "ok"
        assert [m["content"]["data"]["text/plain"] for m in outputs if m["msg_type"] == "execute_result"] == [
            "42"
        ]
        assert last_input(self.kc) == "answer + 1"  # history keeps Python cells as typed

    def test_a_bare_magic_name_runs_the_magic(self) -> None:
        self.flush_channels()
        reply, outputs = execute(self.kc, "pwd")  # automagic: %pwd, not a goal
        assert reply["status"] == "ok"
        assert results(outputs) == [repr(self._tmp.name)]

    def test_silent_requests_always_run_as_python(self) -> None:
        self.flush_channels()
        msg_id = self.kc.execute("Summarize roasting", silent=True)
        reply = self.kc.get_shell_msg(timeout=60)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert (reply["content"]["status"], reply["content"]["ename"]) == ("error", "SyntaxError")

    def test_forced_python_runs_a_word_as_python(self) -> None:
        self.flush_channels()
        reply, _ = execute(self.kc, "#py\nroasting_notes")
        assert (reply["status"], reply["ename"]) == ("error", "NameError")

    def test_a_goal_cell_runs_as_the_shad_cell_magic(self) -> None:
        self.flush_channels()
        execute(self.kc, "Summarize roasting", timeout=GOAL_TIMEOUT)
        # No vault is configured in this kernel, so the run itself stops at once; what matters here is what
        # the kernel ran: the goal as the body of %%shad run, which is also what history keeps.
        assert last_input(self.kc) == "%%shad run\nSummarize roasting"
        execute(self.kc, ">> roasting", timeout=GOAL_TIMEOUT)
        assert last_input(self.kc) == "%%shad run\nroasting"

    def test_an_empty_forced_goal_says_the_goal_is_missing(self) -> None:
        self.flush_channels()
        reply, _ = execute(self.kc, ">>")
        assert (reply["status"], reply["ename"]) == ("error", "ShadUsageError")
        assert "empty" in reply["evalue"]

    def test_magics_are_loaded_at_start(self) -> None:
        self.flush_channels()
        reply, outputs = execute(self.kc, "print('shad_magics' in get_ipython().extension_manager.loaded)")
        assert reply["status"] == "ok"
        assert [m["content"]["text"] for m in outputs if m["msg_type"] == "stream"] == ["True\n"]


# --- goal cells end to end --------------------------------------------------------------------------------


class ModelServer:
    """A local stand-in for the paid model API (OpenAI wire format) that never helps: ``deny`` answers
    every request with HTTP 401 at once; ``hang`` holds every request open until the server closes."""

    def __init__(self, mode: str) -> None:
        self.requested = threading.Event()
        self.release = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                server.requested.set()
                if mode == "hang":
                    server.release.wait(timeout=GOAL_TIMEOUT)
                    return
                body = json.dumps({"error": {"message": "invalid key", "type": "invalid_request_error"}})
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def setup_code(self) -> str:
        """A cell that points the kernel's default provider (openai, from OPENAI_BASE_URL) at this server."""
        return f"import os; os.environ.update(OPENAI_BASE_URL={self.url!r}, SHAD_OPENAI_MODEL='test')"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


RESET_PROVIDER = "os.environ.pop('OPENAI_BASE_URL', None); os.environ.pop('SHAD_OPENAI_MODEL', None)"


class GoalKernel(NamedTuple):
    km: KernelManager
    kc: BlockingKernelClient
    vault: Path


@pytest.fixture(scope="module")
def goal_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GoalKernel]:
    """A shad kernel whose session vault (SHAD_VAULT) is a writable copy of the demo vault."""
    tmp = tmp_path_factory.mktemp("goal-kernel")
    vault = tmp / "vault"
    shutil.copytree(DEMO, vault)
    km, kc = start_shad_kernel(tmp, kernel_env(tmp, SHAD_VAULT=str(vault)))
    try:
        yield GoalKernel(km, kc, vault)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run_bundles(outputs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [
        (m["content"]["data"][RUN_MIME], m["content"].get("metadata", {}))
        for m in outputs
        if m["msg_type"] in ("display_data", "execute_result") and RUN_MIME in m["content"]["data"]
    ]


def test_a_goal_cell_returns_the_run_bundle(goal_kernel: GoalKernel) -> None:
    _, kc, vault = goal_kernel
    goal = "How long should I rest beans after roasting, and why?"
    reply, outputs = execute(kc, goal, timeout=GOAL_TIMEOUT)
    assert reply["status"] == "ok", reply
    [(bundle, metadata)] = run_bundles(outputs)
    assert bundle["goal"] == goal
    assert bundle["status"] in ("SUCCESS", "PARTIAL")
    assert metadata[RUN_MIME] == {"run_id": bundle["run_id"], "status": bundle["status"]}
    assert Path(bundle["history_dir"]).is_relative_to(vault / "Shad" / "History" / "Runs")
    assert any(citation for citation in bundle["citations"])
    # Python still works in the same session, next to the goal.
    reply, outputs = execute(kc, "len('roasting')")
    assert results(outputs) == ["8"]


def test_a_failing_goal_gives_an_error_reply(goal_kernel: GoalKernel) -> None:
    _, kc, vault = goal_kernel
    server = ModelServer("deny")
    goal = "Summarize the roasting notes for a model that refuses"
    try:
        assert execute(kc, server.setup_code())[0]["status"] == "ok"
        reply, outputs = execute(kc, goal, timeout=GOAL_TIMEOUT)
    finally:
        execute(kc, RESET_PROVIDER)
        server.close()
    assert server.requested.is_set()
    assert (reply["status"], reply["ename"]) == ("error", "ShadRunError")
    errors = [m["content"] for m in outputs if m["msg_type"] == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "ShadRunError"
    assert len(errors[0]["traceback"]) <= 3  # one clear line and a hint, not the engine's frames
    assert not run_bundles(outputs)
    assert _run_statuses(vault, goal) == ["FAILED"]


def test_interrupting_a_running_goal_cancels_it(goal_kernel: GoalKernel) -> None:
    km, kc, vault = goal_kernel
    server = ModelServer("hang")
    goal = "Compare light and dark roasts while the model server hangs"
    try:
        assert execute(kc, server.setup_code())[0]["status"] == "ok"
        msg_id = kc.execute(goal)
        # The run is provably in flight once the engine's first model call reaches the server.
        assert server.requested.wait(timeout=GOAL_TIMEOUT), "the run never called the model"
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=GOAL_TIMEOUT)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = kc.get_shell_msg(timeout=GOAL_TIMEOUT)
    finally:
        execute(kc, RESET_PROVIDER)
        server.close()
    # A KeyboardInterrupt that says, in one line, how the run ended and how to resume it.
    assert (reply["content"]["status"], reply["content"]["ename"]) == ("error", "ShadRunCancelled")
    assert reply["content"]["evalue"].startswith("Run cancelled: PARTIAL; `%shad resume ")
    statuses = _run_statuses(vault, goal)
    assert len(statuses) == 1 and statuses[0] != "RUNNING", statuses  # cancelled cleanly, history kept
    reply, outputs = execute(kc, "1 + 1")  # the kernel lives on
    assert reply["status"] == "ok" and results(outputs) == ["2"]


def _run_statuses(vault: Path, goal: str) -> list[str]:
    statuses = []
    for manifest_path in (vault / "Shad" / "History" / "Runs").glob("*/run.manifest.json"):
        manifest = json.loads(manifest_path.read_text())
        if manifest["config"].get("goal") != goal:
            continue
        summary_path = manifest_path.with_name("final.summary.json")
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
        statuses.append(summary.get("status") or manifest["status"])
    return statuses
