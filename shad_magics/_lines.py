"""What the ``%shad`` line magics return: DataFrames for tables (runs, search, providers, analyze) and
small rich objects for the rest. Read-only over run history and vaults, except ``export``."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from traitlets import TraitError

from engine import Run, VaultSet
from engine.runs.dag import Dag, Node, NodeStatus

from ._errors import ShadUsageError
from ._reprs import metrics_frame, metrics_html, search_frame

__all__ = [
    "Analysis",
    "Info",
    "analyze",
    "check_resume_hint",
    "export",
    "providers",
    "runs",
    "search",
    "status",
    "trace",
]


class Info:
    """A short rendered answer (markdown) with the data behind it in ``.data``."""

    def __init__(self, markdown: str, data: Any) -> None:
        self.markdown = markdown
        self.data = data

    def _repr_markdown_(self) -> str:
        return self.markdown

    def __repr__(self) -> str:
        return self.markdown


def _md(text: Any) -> str:
    """Text safe inside a markdown line (no accidental emphasis, links or tables)."""
    return " ".join(str(text).split()).replace("|", "\\|").replace("*", "\\*").replace("_", "\\_")


def status(run_id: str) -> Info:
    """Status, goal, metrics, missing branches and failures of a run (``shad status``)."""
    run = Run.load(run_id)
    s = run.summary
    lines = [f"**{run.id}** `{run.status.value}` {_md(s.get('goal', ''))}", ""]
    if s:
        m = s.get("metrics", {})
        lines.append(
            f"- {m.get('nodes_executed', 0)}/{m.get('nodes_total', 0)} nodes, {m.get('total_tokens', 0)} "
            f"tokens, {m.get('llm_calls', 0)} model calls, {m.get('duration_ms', 0) / 1000:.1f}s, "
            f"provider {_md(s.get('provider', ''))}"
        )
        lines.append(f"- report: `{s.get('report_path', '')}`")
        for b in s.get("missing_branches", []):
            lines.append(f"- missing `{b['node_id']}`: {_md(b['task'])} ({_md(b['reason'])})")
        for f in s.get("failures", []):
            lines.append(f"- failed `{f['node_id']}` {f['phase']}: {f['error_class']}: {_md(f['message'])}")
        if s.get("resume_command"):
            lines.append(f"- to continue: `%shad resume {run.id}`")
    else:
        lines.append(f"- no final summary (the run did not finish); history: `{run.history.dir}`")
    data = s or {"run_id": run.id, "status": run.status.value, "history_dir": str(run.history.dir)}
    return Info("\n".join(lines), data)


def _node_line(node: Node) -> str:
    extra = f" ({node.tokens} tok, {node.duration_ms / 1000:.1f}s)" if node.tokens or node.duration_ms else ""
    return f"`{node.id}` **{node.status.value}** {_md(node.task[:100])}{extra}"


def _tree(dag: Dag) -> list[str]:
    if not len(dag):
        return ["(no nodes)"]
    lines: list[str] = []

    def add(node: Node, depth: int) -> None:
        lines.append("  " * depth + "- " + _node_line(node))
        for child in dag.children(node.id):
            add(child, depth + 1)

    add(dag.root(), 0)
    return lines


def trace(run_id: str, node_id: str | None = None) -> Info:
    """The run's DAG as a tree, or everything about one node (``shad trace tree|node``)."""
    from ._errors import ShadUsageError

    run = Run.load(run_id)
    if node_id is None:
        md = "\n".join([f"**{run.id}** `{run.status.value}`", "", *_tree(run.dag)])
        return Info(md, run.dag.to_json())
    if node_id not in run.dag:
        raise ShadUsageError(
            f"run {run.id} has no node {node_id!r}", hint=f"nodes: {', '.join(n.id for n in run.dag)}"
        )
    node = run.dag.node(node_id)
    lines = [_node_line(node), "", f"**Task:** {_md(node.task)}", ""]
    for key in ("stage", "depth", "parent", "llm_calls", "note"):
        lines.append(f"- {key}: {_md(getattr(node, key, ''))}")
    retrieval = node.retrieval or {}
    if retrieval:
        lines += [
            "",
            f"**Retrieval** ({_md(retrieval.get('method'))}): queries {_md(retrieval.get('queries'))}, "
            f"score {retrieval.get('retrieval_score')}",
        ]
        lines += [
            f"- `{c.get('citation')}` {_md(str(c.get('text', ''))[:160])}" for c in retrieval["context"]
        ]
        if retrieval.get("script"):
            lines += ["", "```python", str(retrieval["script"]).rstrip(), "```"]
    if node.answer:
        lines += ["", "**Answer:**", "", node.answer]
    if node.error:
        lines += ["", f"**Error:** {node.error.get('error_class')}: {_md(node.error.get('message'))}"]
    return Info("\n".join(lines), node.to_dict())


def check_resume_hint(run: Run, hint: str | None) -> str:
    """The hint of ``%shad resume RUN --hint TEXT`` (stripped; "" for none). It steers the nodes whose
    retries ran out, so a run without one is refused before anything starts (as ``shad resume --hint``)."""
    text = (hint or "").strip()
    if text and not any(n.status is NodeStatus.FAILED_WITH_DIAGNOSTIC for n in run.dag):
        raise ShadUsageError(
            f"run {run.id} has no node whose retries ran out: --hint is for those",
            hint=f"to steer a node waiting at a checkpoint: %shad checkpoint {run.id} NODE --hint TEXT",
        )
    return text


def export(run_id: str, output: str, overwrite: bool = False) -> Info:
    """Copy a run's report, summary, DAG and artifacts to a folder (``shad export``); a software run (one
    that kept ``artifacts/manifest.json``) writes only its code files there, through the safe writer
    (nothing outside the folder; existing files kept unless ``overwrite``). ``.data`` is then the
    writer's report: ``{"output", "written", "skipped", "refused"}``."""
    run = Run.load(run_id)
    target = Path(output).expanduser()
    manifest = run.history.dir / "artifacts" / "manifest.json"
    if manifest.is_file():
        return _export_code(run, manifest, target, overwrite)
    target.mkdir(parents=True, exist_ok=True)
    copied: list[str] = []
    for name in ("final.report.md", "final.summary.json", "dag.json"):
        src = run.history.dir / name
        if src.exists():
            shutil.copy2(src, target / name)
            copied.append(str(target / name))
    artifacts = run.history.dir / "artifacts"
    if artifacts.is_dir() and any(artifacts.iterdir()):
        shutil.copytree(artifacts, target / "artifacts", dirs_exist_ok=True)
        copied.append(str(target / "artifacts"))
    names = ", ".join(Path(c).name for c in copied) or "nothing"
    return Info(f"exported {names} of `{run.id}` to `{target}`", copied)


def _export_code(run: Run, manifest: Path, target: Path, overwrite: bool) -> Info:
    from engine.output import Manifest, write_manifest

    report = write_manifest(Manifest.load(manifest), target, overwrite=overwrite).to_dict()
    counts = ", ".join(f"{len(report[k])} {k}" for k in ("written", "skipped", "refused"))
    lines = [f"exported the code of `{run.id}` to `{target}`: {counts}", ""]
    for fate in ("written", "skipped", "refused"):
        for row in report[fate]:
            lines.append(f"- {fate} `{row['path']}` ({_md(row.get('reason', ''))})")
    if any(row.get("reason") != "unchanged" for row in report["skipped"]):
        lines.append("\nexisting files were kept: `%shad export RUN_ID DIR --overwrite` replaces them")
    lines.append(f"\nreport: `{run.history.dir / 'final.report.md'}`")
    return Info("\n".join(lines), report)


def runs(limit: int = 20) -> Any:
    """Recent runs, newest first, as a DataFrame (run_id, status, goal, dir)."""
    import pandas as pd

    from engine.store.history import list_runs

    return pd.DataFrame(list_runs(limit), columns=["run_id", "status", "goal", "dir"])


def search(query: str, vaults: Sequence[str], limit: int = 10) -> Any:
    """Vault search as a DataFrame: path, title, heading (``""`` when the passage has none), score, snippet,
    vault; it shows whole snippets, and notes as links, and says which synonyms were searched for a word
    no note holds (``attrs["synonyms"]``)."""
    from ._links import vault_roots

    vs = VaultSet(list(vaults))
    hits = vs.search(query, limit=limit)
    return search_frame(hits, vault_roots(vaults), query, vs.searched_synonyms(query))


def _configured(name: str) -> tuple[bool | None, str]:
    env = os.environ
    if name == "offline":
        return True, "always available: no model, extractive answers"
    if name == "anthropic":
        if importlib.util.find_spec("anthropic") is None:
            return False, "pip install anthropic"
        return bool(env.get("ANTHROPIC_API_KEY", "").strip()), "needs ANTHROPIC_API_KEY"
    if name == "openai":
        if importlib.util.find_spec("openai") is None:
            return False, "pip install 'shad[openai]'"
        ok = bool(env.get("OPENAI_BASE_URL", "").strip() or env.get("OPENAI_API_KEY", "").strip())
        return ok, "needs OPENAI_BASE_URL (a local server) or OPENAI_API_KEY"
    if name == "claude-code":
        binary = env.get("SHAD_CLAUDE_BIN") or "claude"
        return shutil.which(binary) is not None, f"needs the {binary!r} CLI on PATH"
    if name == "replay":
        return True, "answers from a recorded run: --provider replay --from RUN_ID"
    return None, "registered by a plugin"


def providers() -> Any:
    """The engine's provider registry as a DataFrame: name, configured, default, how to configure."""
    import pandas as pd

    from engine import llm

    default = llm.default_provider_name()
    rows = []
    for name in llm.available():
        configured, how = _configured(name)
        rows.append({"name": name, "configured": configured, "default": name == default, "how": how})
    return pd.DataFrame(rows, columns=["name", "configured", "default", "how"])


class Analysis:
    """``%shad analyze``: per-node metrics (``.metrics``, a DataFrame) and a short ``.summary``."""

    def __init__(self, run: Run) -> None:
        self.run_id = run.id
        self.metrics = metrics_frame(run.metrics)
        frame = self.metrics
        m = run.summary.get("metrics", {})
        by_status = frame["status"].value_counts().to_dict() if len(frame) else {}
        heaviest = frame.sort_values("tokens", ascending=False).head(3) if len(frame) else frame
        scores = frame["retrieval_score"].dropna() if len(frame) else frame
        self.summary: dict[str, Any] = {
            "run_id": run.id,
            "status": run.status.value,
            "nodes": len(frame),
            "by_status": {str(k): int(v) for k, v in by_status.items()},
            "total_tokens": int(m.get("total_tokens", frame["tokens"].sum() if len(frame) else 0)),
            "llm_calls": int(m.get("llm_calls", 0)),
            "duration_s": round(float(m.get("duration_ms", 0)) / 1000, 2),
            "heaviest_nodes": [str(n) for n in heaviest["node_id"]] if len(frame) else [],
            "mean_retrieval_score": round(float(scores.mean()), 3) if len(scores) else None,
            "cache_hits": int(m.get("cache_hits", 0)),
            "failures": len(run.summary.get("failures", run.failures)),
        }

    def text(self) -> str:
        s = self.summary
        states = ", ".join(f"{v} {k}" for k, v in s["by_status"].items()) or "no nodes"
        score = s["mean_retrieval_score"]
        heaviest = ", ".join(s["heaviest_nodes"]) or "-"
        return (
            f"{s['run_id']} {s['status']}: {s['nodes']} nodes ({states}); {s['total_tokens']} tokens, "
            f"{s['llm_calls']} model calls, {s['duration_s']}s; heaviest: {heaviest}; "
            f"mean retrieval score {score if score is not None else '-'}; {s['failures']} failures"
        )

    def _repr_html_(self) -> str:
        import html

        return f"<p>{html.escape(self.text())}</p>" + metrics_html(self.metrics)

    def __repr__(self) -> str:
        return f"{self.text()}\n\n{self.metrics.to_string(max_rows=60)}"


def analyze(run_id: str) -> Analysis:
    return Analysis(Run.load(run_id))


def config_changes(traits: dict[str, Any], pairs: list[tuple[str, str]]) -> dict[str, tuple[str, Any]]:
    """``%shad config KEY=VALUE ...`` -> {setting: (text as given, value)}; an unknown setting, a missing
    vault folder or a bad value is a usage error before any setting changes."""
    vaults: list[str] = []
    changes: dict[str, Any] = {}
    for key, value in pairs:
        if key not in traits:
            raise ShadUsageError(f"unknown setting {key!r}", hint=f"settings: {', '.join(sorted(traits))}")
        if key == "vault":
            path = Path(value).expanduser()
            if not path.is_dir():
                raise ShadUsageError(f"vault folder not found: {path}", hint="give the folder of your notes")
            vaults.append(str(path.resolve()))
            continue
        try:
            changes[key] = (value, traits[key].from_string(value))
        except (TraitError, ValueError) as exc:
            raise ShadUsageError(
                f"bad value for {key}: {value!r}", hint=f"{key} takes {traits[key].info()}"
            ) from exc
    if vaults:
        changes["vault"] = (" ".join(vaults), vaults)
    return changes
