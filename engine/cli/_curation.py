"""``shad learnings ls|promote|reject`` and ``shad approvals ls|approve|reject|log|audit``: what runs
proposed or asked for, decided by the person at the terminal (the CLI acts as the login user).

Exit codes: 0 done; 1 an approval was approved but its execution failed (nothing was deleted or
published: the note changed since the request, or the target could not be written); 2 a usage error (no
such approval or learning, bad option); 3 nothing to do (decided already).
"""

from __future__ import annotations

import getpass
import json
import os
from datetime import datetime
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from ..errors import ShadError, UsageError

__all__ = ["approvals_group", "learnings_group"]

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
vault_option = click.option(
    "--vault", metavar="DIR", help="The vault folder (default: the first of $SHAD_VAULT)."
)


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def _vault(vault: str | None) -> str:
    if vault:
        return vault
    first = (os.environ.get("SHAD_VAULT") or "").split(os.pathsep)[0].strip()
    if not first:
        raise UsageError("which vault?", hint="pass --vault DIR (or set $SHAD_VAULT)")
    return first


def _person() -> str:
    return getpass.getuser()


# --- learnings -------------------------------------------------------------------------------------------


@click.group("learnings")
def learnings_group() -> None:
    """Notes runs proposed: list them, promote or reject them.

    A run proposes a learning as a staging note in Shad/Staging/ (status: staging). Only a person
    promotes it (status: verified, moved to Shad/Learnings/) or rejects it (status: rejected, kept in
    Shad/Staging/ for the record). A learning about Shad's own skills or policies is promoted to
    Shad/Learnings/ like any other: Shad never changes its skills or policies from one.
    """


@learnings_group.command("ls")
@vault_option
@click.option(
    "--status", type=click.Choice(["staging", "verified", "rejected"]), help="Only learnings in this status."
)
@json_option
def learnings_ls_cmd(vault: str | None, status: str | None, as_json: bool) -> int:
    """The vault's learnings, newest proposal first."""
    from ..curation import learnings

    items = learnings(_vault(vault), status)
    if as_json:
        _print_json([item.to_dict() for item in items])
        return 0
    if not items:
        out.print("no learnings" + (f" in status {status}" if status else ""))
        return 0
    for item in items:
        who = item.promoted_by or item.rejected_by or item.proposed_by
        out.print(
            f"[bold]{escape(item.status):9}[/] {escape(item.path)}  [dim]{escape(item.kind)} · "
            f"{escape(who)} · {escape(item.promoted_at or item.rejected_at or item.proposed_at)}[/]"
        )
        if item.status == "staging":
            out.print(
                f"          [dim]shad learnings promote {escape(item.slug)} · reject {escape(item.slug)}[/]"
            )
    return 0


@learnings_group.command("promote")
@click.argument("learning", metavar="PATH_OR_SLUG")
@vault_option
@json_option
def learnings_promote_cmd(learning: str, vault: str | None, as_json: bool) -> int:
    """Verify a staging learning: status verified, promoted_by you, moved to Shad/Learnings/."""
    from ..curation import promote_learning

    item = promote_learning(_vault(vault), learning, by=_person())
    if as_json:
        _print_json(item.to_dict())
    else:
        out.print(f"promoted to {escape(item.path)} (verified by {escape(item.promoted_by)})")
    return 0


@learnings_group.command("reject")
@click.argument("learning", metavar="PATH_OR_SLUG")
@vault_option
@click.option("--reason", default="", help="Why (kept in the note's rejection_reason).")
@json_option
def learnings_reject_cmd(learning: str, vault: str | None, reason: str, as_json: bool) -> int:
    """Turn a staging learning down: status rejected; it stays in Shad/Staging/ for the record."""
    from ..curation import reject_learning

    item = reject_learning(_vault(vault), learning, by=_person(), reason=reason)
    if as_json:
        _print_json(item.to_dict())
    else:
        out.print(f"rejected {escape(item.path)}")
    return 0


# --- approvals -------------------------------------------------------------------------------------------


@click.group("approvals")
def approvals_group() -> None:
    """Deletes and publishing wait here for a person: list, approve or reject them.

    Nothing is deleted or published until approved; approving executes the request (a delete through the
    vault's writer, a publish by copying the note to its target folder) unless the note changed since it
    was requested. Every decision is logged with what it authorised (shad approvals log). Exit codes: 0
    done, 1 approved but not executed (see why), 2 usage, 3 decided already.
    """


def _approval_line(a: Any) -> str:
    what = f"{a.kind} {a.path}" + (f" -> {a.target}" if a.target else "")
    by = f" · decided by {a.decided_by}" if a.decided_by else ""
    return (
        f"[bold]#{a.id}[/] {escape(a.status):8} {escape(what)}  [dim]{escape(a.reason)} · asked by "
        f"{escape(a.requested_by)} at {escape(a.requested_at)}{escape(by)}[/]"
    )


def _approval_id(text: str) -> int:
    try:
        return int(text.lstrip("#"))
    except ValueError:
        raise UsageError(f"not an approval id: {text!r}", hint="ids are numbers: shad approvals ls") from None


@approvals_group.command("ls")
@vault_option
@click.option("--all", "show_all", is_flag=True, help="Every approval, decided ones too.")
@json_option
def approvals_ls_cmd(vault: str | None, show_all: bool, as_json: bool) -> int:
    """What waits for a decision (with --all: everything), oldest first."""
    from ..curation import approvals

    items = approvals(vault, None if show_all else "pending")
    if as_json:
        _print_json([a.to_dict() for a in items])
        return 0
    if not items:
        out.print("nothing waits for a decision" if not show_all else "the approval queue is empty")
        return 0
    for a in items:
        out.print(_approval_line(a))
    if any(a.status == "pending" for a in items):
        err.print("[dim]decide with: shad approvals approve ID | reject ID [--note TEXT][/]")
    return 0


@approvals_group.command("approve")
@click.argument("approval_id", metavar="ID")
@click.option("--note", default="", help="A note kept with the decision.")
@json_option
def approve_cmd(approval_id: str, note: str, as_json: bool) -> int:
    """Approve request ID and execute it (exit 1, nothing done, if the note changed since the request)."""
    from ..curation import approve

    a = approve(_approval_id(approval_id), _person(), note)
    if as_json:
        _print_json(a.to_dict())
        return 0 if a.status == "executed" else 1
    if a.status != "executed":
        raise ShadError(f"approval {a.id} failed: {a.result}", hint="see: shad approvals log")
    out.print(f"approved #{a.id}: {escape(a.result)}")
    return 0


@approvals_group.command("reject")
@click.argument("approval_id", metavar="ID")
@click.option("--note", default="", help="Why (kept with the decision).")
@json_option
def reject_cmd(approval_id: str, note: str, as_json: bool) -> int:
    """Reject request ID: nothing is deleted or published."""
    from ..curation import reject

    a = reject(_approval_id(approval_id), _person(), note)
    if as_json:
        _print_json(a.to_dict())
    else:
        out.print(f"rejected #{a.id}: {escape(a.kind)} {escape(a.path)} stays as it is")
    return 0


@approvals_group.command("log")
@click.option("--id", "approval_id", type=int, help="Only this approval's entries.")
@json_option
def log_cmd(approval_id: int | None, as_json: bool) -> int:
    """Every decision and outcome, oldest first: who, when, what it authorised (kind, path, hash)."""
    from ..curation import approval_log

    entries = approval_log(approval_id)
    if as_json:
        _print_json([e.to_dict() for e in entries])
        return 0
    if not entries:
        out.print("no decisions yet")
    for e in entries:
        what = f"{e.kind} {e.path}" + (f" -> {e.target}" if e.target else "")
        extra = " · ".join(x for x in (e.note, e.result) if x)
        out.print(
            f"{escape(e.at)} #{e.approval_id} [bold]{escape(e.action)}[/] by {escape(e.by)}: {escape(what)} "
            f"[dim]sha256 {escape(e.hash[:12] or '-')}{' · ' + escape(extra) if extra else ''}[/]"
        )
    return 0


@approvals_group.command("audit")
@click.option("--last", type=int, default=50, show_default=True, help="Only the last N writes (0: all).")
@json_option
def audit_cmd(last: int, as_json: bool) -> int:
    """Every note written outside a run (approvals applied, publishing, learnings decided, ingest, enrich,
    reports), from SHAD_HOME/audit.jsonl: when, what, where, bytes and sha256. A run's writes are events
    in its own history (shad trace)."""
    from ..curation import audit_log

    records = audit_log(last or None)
    if as_json:
        _print_json(records)
        return 0
    if not records:
        out.print("no writes logged yet")
    for r in records:
        when = datetime.fromtimestamp(float(r.get("ts", 0))).isoformat(timespec="seconds")
        out.print(
            f"{when} [bold]{escape(str(r.get('action', '')))}[/] {escape(str(r.get('path', '')))} in "
            f"{escape(str(r.get('vault', '')))} [dim]{r.get('bytes', 0)} bytes · sha256 "
            f"{escape(str(r.get('hash', ''))[:12])} · {escape(str(r.get('why', '')))}[/]"
        )
    return 0
