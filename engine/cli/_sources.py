"""``shad sources ls|show|export|pin|update|policy``: the shadow index of ingested sources.

The index is SQLite at $SHAD_HOME/sources.sqlite, outside every vault. Only click is imported at the
top: the engine loads when a command runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

__all__ = ["POLICIES", "sources_group"]

POLICIES = ("manual", "notify", "auto")  # engine.curation.SOURCE_POLICIES (a test keeps them in step)


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _short(revision: str | None) -> str:
    if not revision:
        return "-"
    return revision[:19] if revision.startswith("sha256:") else revision[:12]


@click.group("sources")
def sources_group() -> None:
    """The ingested sources and their snapshots (the shadow index)."""


@sources_group.command("ls")
@click.option("--json", "as_json", is_flag=True, help="Every source with all its snapshots, as JSON.")
def ls_cmd(as_json: bool) -> int:
    """Each source with its latest snapshot."""
    from ..curation import ShadowIndex

    sources = ShadowIndex().sources()
    if as_json:
        _echo_json([s.to_dict() for s in sources])
        return 0
    if not sources:
        click.echo("no sources yet: shad ingest PATH_OR_URL --vault V brings one in")
        return 0
    rows = [("SOURCE", "TYPE", "POLICY", "LATEST SNAPSHOT", "REVISION", "FILES", "URL")]
    for s in sources:
        latest = s.latest
        policy = s.policy + (f" (pinned {_short(s.pinned_revision)})" if s.pinned_revision else "")
        rows.append(
            (
                s.id,
                s.type,
                policy,
                latest.id if latest else "-",
                _short(latest.revision if latest else None),
                str(latest.files) if latest else "-",
                s.url,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:  # plain aligned columns: nothing is cut, whatever the terminal's width
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1])
    return 0


@sources_group.command("show")
@click.argument("source_id")
@click.option("--json", "as_json", is_flag=True, help="The source and all its snapshots, as JSON.")
def show_cmd(source_id: str, as_json: bool) -> int:
    """One source: where it comes from, its policy, pin and every snapshot."""
    from ..curation import ShadowIndex

    source = ShadowIndex().source(source_id)
    if as_json:
        _echo_json(source.to_dict())
        return 0
    click.echo(f"{source.id}: {source.url} ({source.type}, domain {source.domain})")
    click.echo(f"vault: {source.vault}")
    click.echo(f"policy: {source.policy}; pinned: {source.pinned_revision or 'no'}; preset: {source.preset}")
    for snap in reversed(source.snapshots):
        mark = " (latest)" if snap.latest else ""
        click.echo(
            f"  {snap.id}{mark}  {_short(snap.revision)}  {snap.files} files  {snap.created}  {snap.path}"
        )
    return 0


@sources_group.command("export")
@click.option("--json", "as_json", is_flag=True, help="JSON (the default format).")
@click.option("--format", "fmt", type=click.Choice(["json", "yaml"]), default=None, help="json or yaml.")
@click.option("--out", metavar="FILE", help="Write to FILE instead of stdout.")
def export_cmd(as_json: bool, fmt: str | None, out: str | None) -> int:
    """The whole index (sources, snapshots, latest, policies, pins) as JSON or YAML."""
    from ..curation import ShadowIndex

    data = ShadowIndex().export()
    if fmt == "yaml" and not as_json:
        import yaml

        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    else:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if out is None:
        click.echo(text, nl=False)
        return 0
    from ..fs import atomic_write

    atomic_write(Path(out).expanduser(), text)
    click.echo(f"wrote {len(data['sources'])} sources to {out}", err=True)
    return 0


@sources_group.command("pin")
@click.argument("source_id")
@click.argument("revision", required=False)
@click.option("--clear", is_flag=True, help="Unpin: ingest and update follow the source again.")
@click.option("--json", "as_json", is_flag=True)
def pin_cmd(source_id: str, revision: str | None, clear: bool, as_json: bool) -> int:
    """Keep SOURCE_ID at REVISION (default: its latest snapshot's): ingest and update stay there."""
    from ..curation import ShadowIndex
    from ..errors import UsageError

    index = ShadowIndex()
    if clear and revision:
        raise UsageError("give a REVISION or --clear, not both")
    if not clear and revision is None:
        latest = index.source(source_id).latest
        if latest is None:
            raise UsageError(f"{source_id} has no snapshot to pin", hint="give the REVISION")
        revision = latest.revision
    source = index.pin(source_id, None if clear else revision)
    if as_json:
        _echo_json(source.to_dict())
    elif clear:
        click.echo(f"{source.id} is no longer pinned")
    else:
        click.echo(f"{source.id} pinned at {source.pinned_revision}")
    return 0


@sources_group.command("policy")
@click.argument("source_id")
@click.argument("policy", type=click.Choice(POLICIES))
@click.option("--json", "as_json", is_flag=True)
def policy_cmd(source_id: str, policy: str, as_json: bool) -> int:
    """How update treats SOURCE_ID: manual (only when named), notify (report), auto (ingest)."""
    from ..curation import ShadowIndex

    source = ShadowIndex().set_policy(source_id, policy)
    if as_json:
        _echo_json(source.to_dict())
    else:
        click.echo(f"{source.id}: policy {source.policy}")
    return 0


@sources_group.command("update")
@click.argument("source_id", required=False)
@click.option("-y", "--yes", is_flag=True, help="Ingest without asking (needed when not on a terminal).")
@click.option("--json", "as_json", is_flag=True, help="One result per source, as JSON.")
def update_cmd(source_id: str | None, yes: bool, as_json: bool) -> int:
    """Re-ingest sources whose policy allows it (all, or SOURCE_ID whatever its policy).

    manual sources update only when named; notify sources report a newer revision without ingesting it;
    auto sources are ingested. A pinned source stays at its revision. Exit 1 if a source failed.
    """
    from ..curation import IngestPlan, update_sources

    def ask(plan: IngestPlan) -> bool:
        return click.confirm(f"Ingest {plan.describe()}?", default=False, err=True)

    interactive = sys.stdin.isatty()  # the question goes to stderr: --json output stays clean
    outcomes = update_sources(source_id, yes=yes, confirm=ask if not yes and interactive else None)
    if as_json:
        _echo_json([o.to_dict() for o in outcomes])
    else:
        if not outcomes:
            click.echo("no sources yet: shad ingest PATH_OR_URL --vault V brings one in")
        for o in outcomes:
            click.echo(f"{o.source_id} [{o.policy}] {o.action}: {o.message}")
    return 1 if any(o.action == "failed" for o in outcomes) else 0
