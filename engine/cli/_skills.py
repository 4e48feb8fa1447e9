"""``shad skills ls | show NAME | route GOAL``: the skills a run can use, one skill, and which a goal picks.

Without ``--vault`` only the package's skills are listed; with vaults, their ``Shad/Skills/`` override by
name. Only click is imported at the top: the engine loads when a command runs.
"""

from __future__ import annotations

import json
from typing import Any

import click

__all__ = ["skills_group"]

_vaults = click.option(
    "--vault",
    "vaults",
    multiple=True,
    metavar="DIR",
    help="A vault whose Shad/Skills/ overrides the package's skills (repeatable; the first wins).",
)
_json = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _discover(vaults: tuple[str, ...]) -> Any:
    from ..skills import discover
    from ..vault import VaultSet

    if not vaults:
        return discover()
    opened = VaultSet(list(vaults))  # folders, or mcp: vaults (their Shad/Skills/ read through the server)
    try:
        return discover(opened.vaults)
    finally:
        opened.close()


@click.group("skills")
def skills_group() -> None:
    """Skills: guidance (and strategies) runs add when their goal fits."""


@skills_group.command("ls")
@_vaults
@_json
def ls_cmd(vaults: tuple[str, ...], as_json: bool) -> int:
    """Every skill in force, where it comes from, and the files that could not be used."""
    found = _discover(vaults)
    if as_json:
        _echo_json(found.to_dict())
        return 0
    rows = [("SKILL", "SOURCE", "PRIORITY", "COMPOSES WITH", "DESCRIPTION")]
    for s in found:
        source = s.source + (f" (overrides {s.overrides})" if s.overrides else "")
        rows.append((s.name, source, str(s.priority), ", ".join(s.composes_with) or "-", s.description))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4])
    for p in found.problems:
        click.echo(f"problem: {p['path']}: {p['message']}", err=True)
    return 0


@skills_group.command("show")
@click.argument("name")
@_vaults
@_json
def show_cmd(name: str, vaults: tuple[str, ...], as_json: bool) -> int:
    """One skill: its routing rules and its guidance."""
    skill = _discover(vaults).get(name)
    if as_json:
        _echo_json(skill.to_dict())
        return 0
    click.echo(f"{skill.name} — {skill.description}")
    overrides = f", overrides {skill.overrides}" if skill.overrides else ""
    click.echo(f"  source: {skill.source} ({skill.path}){overrides}")
    for key in ("use_when", "intents", "entities", "exclusions", "composes_with", "strategies"):
        values = getattr(skill, key)
        if values:
            click.echo(f"  {key}: {', '.join(values)}")
    click.echo(f"  priority: {skill.priority}, max_depth: {skill.max_depth}")
    if skill.strategy:
        click.echo(f"  adds the strategy: {skill.strategy.get('name')}")
    click.echo("")
    click.echo(skill.guidance)
    return 0


@skills_group.command("route")
@click.argument("goal")
@_vaults
@click.option("--strategy", help="The run's strategy (a skill that fits it scores a little higher).")
@_json
def route_cmd(goal: str, vaults: tuple[str, ...], strategy: str | None, as_json: bool) -> int:
    """Which skills GOAL would use, with every candidate's score and reasons (as decisions/skills.json)."""
    from ..skills import route

    routing = route(goal, _discover(vaults), strategy=strategy)
    if as_json:
        _echo_json(routing.to_dict())
        return 0
    click.echo(f"primary: {routing.primary or '-'}; support: {', '.join(routing.support) or '-'}")
    for c in routing.candidates:
        click.echo(f"  {c.score:7.3f}  {c.name}: {'; '.join(c.why)}")
    for g in routing.guarded:
        click.echo(f"  stopped: {g['skill']}: {g['reason']}")
    return 0


@skills_group.command("voices")
@_vaults
@_json
def voices_cmd(vaults: tuple[str, ...], as_json: bool) -> int:
    """The voices a report can be rendered in (shad run --voice NAME): the package's and the vaults'."""
    from ..skills import voices

    found = voices(list(vaults))
    if as_json:
        _echo_json([v.to_dict() for v in found.values()])
        return 0
    for v in found.values():
        click.echo(f"{v.name:12}  {v.source:10}  {v.description}")
    return 0
