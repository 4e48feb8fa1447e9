"""``RunConfig`` and ``Budgets``: everything a run needs to know, validated when it is built."""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .errors import UsageError, VaultNotFoundError
from .text import STOP_WORDS

__all__ = [
    "CHECKPOINT_POLICIES",
    "CONCURRENCY_MODES",
    "HISTORY_FOLDER",
    "OFFLINE_ENV",
    "PROFILES",
    "TEST_MODES",
    "UNCITED_FOLDERS",
    "Budgets",
    "RunConfig",
    "is_loopback",
    "offline_env",
    "refuse_offline",
    "remote_scheme",
    "shad_home",
]

PROFILES = ("strict", "local", "extended")
# A vault named ``SCHEME:REST`` (``mcp:shad mcp serve --vault ~/Notes``) is read through a backend
# (engine.vault.open_vault) rather than from a folder; two letters at least, so ``C:\Notes`` stays a folder.
_REMOTE_VAULT = re.compile(r"^([a-z][a-z0-9+.-]+):")
_WORD = re.compile(r"\w+")


# Offline mode (E7): set to 1 (or pass --offline), nothing leaves the machine whatever keys are set.
OFFLINE_ENV = "SHAD_OFFLINE"
LOCAL_PROVIDERS = ("offline", "replay")


def offline_env() -> bool:
    """Is offline mode switched on for this process (``SHAD_OFFLINE=1``)?"""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def refuse_offline(what: str, *, offline: bool | None = None) -> None:
    """A ``UsageError`` when offline mode is on (``offline``, else ``SHAD_OFFLINE``): ``what`` would call
    out of the machine."""
    if offline or (offline is None and offline_env()):
        raise UsageError(
            f"offline mode refuses {what}: nothing leaves the machine",
            hint=f"drop --offline (and unset {OFFLINE_ENV}) to allow it",
        )


def is_loopback(host: str) -> bool:
    """``127.0.0.1``, ``::1``, ``localhost``: reachable from this machine only."""
    import ipaddress

    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _loopback_url(spec: str) -> bool:
    from urllib.parse import urlsplit

    return is_loopback(urlsplit(spec.split(":", 1)[1].strip()).hostname or "")


def remote_scheme(vault: str | os.PathLike[str]) -> str | None:
    """The backend scheme of a vault given as ``SCHEME:...`` (``mcp``), or None for a folder."""
    if not isinstance(vault, str) or Path(vault).expanduser().is_dir():  # a folder named "notes:old"
        return None
    match = _REMOTE_VAULT.match(vault)
    return match.group(1) if match else None


CONCURRENCY_MODES = ("adaptive", "fixed")
# What a run does at a checkpoint (engine/checkpoints.py): ask a decider, pause (the node waits, the run
# ends NEEDS_HUMAN), approve or skip by itself, or open none (--no-checkpoints).
CHECKPOINT_POLICIES = ("ask", "pause", "approve", "skip", "off")
# What a node whose retries ran out (FAILED_WITH_DIAGNOSTIC) makes of the run (engine.runs._exhausted).
ON_EXHAUSTED = ("partial", "fail")
# How a software run writes tests (seed §2.11): None is the strategy's default, spec-first stubs after the
# contracts plus a post-implementation pass ("stubs+post").
TEST_MODES = ("off", "stubs", "post", "tdd", "co")
VERIFY_LEVELS = ("off", "basic", "build", "strict")  # engine.verify.LEVELS, kept here so config stays cheap
TIERS = ("orchestrator", "worker", "leaf", "judge", "embedder")
# Shad's own run history inside a vault: runs write there, retrieval leaves it out unless asked.
HISTORY_FOLDER = "Shad/History"
# Shad's working notes: reports about the vault, unreviewed learnings, scratch, and its skills (instructions
# to Shad, not knowledge). Never a source of a run (verified learnings, in Shad/Learnings, are: a person
# promoted them).
UNCITED_FOLDERS = ("Shad/Reports", "Shad/Staging", "Shad/Scratch", "Shad/Skills")


def shad_home() -> Path:
    """Where Shad keeps what is not the user's (indexes, the store, the run registry): ``$SHAD_HOME``,
    else ``~/.shad``."""
    return Path(os.environ.get("SHAD_HOME") or Path.home() / ".shad").expanduser()


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Budgets:
    """Hard limits of one run; the engine enforces them, not the model."""

    max_depth: int = 3
    max_nodes: int = 50
    max_branching: int = 6
    max_wall_time: float = 300.0  # seconds
    max_tokens: int = 100_000
    max_usd: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_depth", "max_nodes", "max_branching", "max_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UsageError(f"{name} must be a whole number of at least 1 (got {value!r})")
        if self.max_depth > 10:
            raise UsageError(f"max_depth {self.max_depth} is too deep", hint="use at most 10")
        if not _is_number(self.max_wall_time) or not self.max_wall_time > 0:
            raise UsageError(f"max_wall_time must be positive seconds (got {self.max_wall_time!r})")
        if self.max_usd is not None and (not _is_number(self.max_usd) or not self.max_usd > 0):
            raise UsageError(f"max_usd must be positive (got {self.max_usd!r})")
        if self.max_tokens < 1000:
            raise UsageError(
                f"max_tokens {self.max_tokens} leaves nothing to work with",
                hint="a run needs at least 1000 tokens (800 are reserved for the final synthesis)",
            )


@dataclass(frozen=True)
class RunConfig:
    """What to do (goal), where to look (vaults, first has priority), and within which limits."""

    goal: str
    vaults: tuple[str, ...]
    strategy: str | None = None  # None: chosen by the classifier
    budgets: Budgets = field(default_factory=Budgets)
    provider: str | None = None  # None: anthropic if its key is set, else openai if its URL is, else offline
    models: dict[str, str] = field(default_factory=dict)  # tier -> model id
    max_parallel: int = 4
    max_llm: int = 2
    concurrency_mode: str = "adaptive"
    profile: str = "strict"
    fs_read: tuple[str, ...] = ()  # folders the sandbox's scripts may read (profile local or extended)
    net_allow: tuple[str, ...] = ()  # hosts the sandbox may GET from (profile extended)
    offline: bool = False  # refuse every external call (also when SHAD_OFFLINE=1): see offline_env
    history_dir: str | None = None
    include_history: bool = False  # may retrieval cite earlier runs' reports (Shad/History/)?
    code_mode: bool = True
    replay_from: str | None = None  # run id whose recorded model calls answer this run
    use_cache: bool = True  # look finished work up in the cache (--no-cache: neither read nor write it)
    refresh_cache: bool = False  # recompute everything, overwriting what the cache held (--refresh-cache)
    store_url: str | None = (
        None  # cache + ledger: redis://... or a SQLite path (default: $SHAD_STORE, REDIS_URL)
    )
    cache_ttls: dict[str, float] = field(default_factory=dict)  # vault (id, name or path) -> TTL seconds
    checkpoints: str = "pause"  # one of CHECKPOINT_POLICIES
    checkpoint_on: tuple[str, ...] = ()  # stages whose nodes always open a checkpoint (--checkpoint-on)
    on_exhausted: str = "partial"  # one of ON_EXHAUSTED (--on-exhausted): engine.runs._exhausted
    # USD per million (input, output) tokens, by model id: what ``budgets.max_usd`` is enforced with.
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    # Software runs (issue 13): how the code is checked, how tests are written, where it may be written.
    verify: str = "basic"  # off | basic | build | strict
    block_on: tuple[str, ...] = ()  # checks that block on top of the level's (names as engine.verify.CHECKS)
    warn_only: tuple[str, ...] = ()  # checks that only warn
    tests: str | None = None  # one of TEST_MODES; None: stubs after the contracts plus a post pass
    write_files: bool = False  # nothing is written unless this and ``output`` are both given
    output: str | None = None  # the folder the code is written into, and nothing outside it
    overwrite: bool = False  # may existing files under ``output`` be replaced?
    garden: bool = False  # propose a type for untyped notes the run read (through the approval queue)
    learn: bool = False  # propose the cited answer as a learning (a staging note a person promotes)
    voice: str | None = None  # render the final report in this voice (engine.skills voices; needs a model)

    def check_new_goal(self) -> None:
        """Refuse a new run whose goal holds only common words ("the and of", "What is this?"): there is
        nothing to look for, and any passage would seem to answer it. (Checked when a run starts, not here:
        a run stored before the check must still load.)"""
        words = _WORD.findall(self.goal.lower())
        if words and all(w in STOP_WORDS for w in words):
            raise UsageError(
                f"the goal has no word to look for: {self.goal.strip()[:80]!r} holds only common words",
                hint='name what you want to know, e.g. shad run "How long should beans rest?"',
            )

    def __post_init__(self) -> None:
        if not isinstance(self.goal, str) or not self.goal.strip():
            raise UsageError("the goal is empty", hint='say what you want, e.g. shad run "How do I …?"')
        if isinstance(self.vaults, (str, os.PathLike)):
            object.__setattr__(self, "vaults", (str(self.vaults),))
        if not self.vaults:
            raise UsageError("no vault given", hint="pass --vault DIR (repeat it for layered vaults)")
        resolved = []
        for v in self.vaults:
            if remote_scheme(v) is not None:
                resolved.append(v.strip())  # opened, and checked, by the vault layer's backend
                continue
            path = Path(v).expanduser()
            if path.exists() and not path.is_dir():
                raise VaultNotFoundError(
                    f"vault path is not a folder: {path}",
                    hint="pass the vault's folder, not a file inside it",
                )
            if not path.is_dir():
                raise VaultNotFoundError(
                    f"vault folder not found: {path}",
                    hint="pass --vault with the folder that holds your notes",
                )
            resolved.append(str(path.resolve()))
        object.__setattr__(self, "vaults", tuple(resolved))
        if self.learn and remote_scheme(self.vaults[0]) is not None:
            raise UsageError(
                "--learn writes a staging note into the first vault, which is read through a backend "
                f"({self.vaults[0].split(':', 1)[0]}:) and cannot be written",
                hint="put a vault folder first (--vault DIR), or run without --learn",
            )
        if self.garden and all(remote_scheme(v) is not None for v in self.vaults):
            raise UsageError(
                "--garden proposes frontmatter for notes in a vault folder, and every vault of this run "
                "is read through a backend",
                hint="add a vault folder (--vault DIR), or run without --garden",
            )
        if self.strategy is not None:
            from . import strategies  # strategies load their data files; config stays cheap to import

            if self.strategy not in strategies.names():
                raise UsageError(
                    f"unknown strategy {self.strategy!r}", hint=f"strategies: {', '.join(strategies.names())}"
                )
        for tier in self.models:
            if tier not in TIERS:
                raise UsageError(f"unknown model tier {tier!r}", hint=f"tiers: {', '.join(TIERS)}")
        if self.concurrency_mode not in CONCURRENCY_MODES:
            raise UsageError(
                f"unknown concurrency mode {self.concurrency_mode!r}", hint="use adaptive or fixed"
            )
        if self.profile not in PROFILES:
            raise UsageError(f"unknown profile {self.profile!r}", hint=f"profiles: {', '.join(PROFILES)}")
        if self.checkpoints not in CHECKPOINT_POLICIES:
            raise UsageError(
                f"unknown checkpoint policy {self.checkpoints!r}",
                hint=f"policies: {', '.join(CHECKPOINT_POLICIES)}",
            )
        if self.on_exhausted not in ON_EXHAUSTED:
            raise UsageError(
                f"unknown --on-exhausted policy {self.on_exhausted!r}",
                hint=f"one of {', '.join(ON_EXHAUSTED)}",
            )
        for model, price in self.prices.items():
            if (
                not isinstance(price, (tuple, list))
                or len(price) != 2
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in price)
            ):
                raise UsageError(
                    f"price of {model!r} must be (input, output) USD per million tokens, got {price!r}",
                    hint="e.g. --price claude-sonnet-5-5=3:15",
                )
        for vault, ttl in self.cache_ttls.items():
            if not _is_number(ttl) or not ttl > 0:
                raise UsageError(f"cache TTL of {vault!r} must be positive seconds (got {ttl!r})")
        if self.provider == "replay" and not self.replay_from and not os.environ.get("SHAD_REPLAY"):
            raise UsageError(
                "the replay provider needs the run to replay",
                hint="pass --from RUN_ID (or: shad replay RUN_ID)",
            )
        for name in ("max_parallel", "max_llm"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UsageError(f"{name} must be at least 1 (got {value!r})")
        self._check_software_options()
        self._check_reach()

    def _check_reach(self) -> None:
        """The sandbox's extra reach (files, hosts), and offline mode: what may leave the machine."""
        for name in ("fs_read", "net_allow", "checkpoint_on"):
            value = getattr(self, name)
            object.__setattr__(self, name, (value,) if isinstance(value, str) else tuple(value))
        if self.fs_read and self.profile == "strict":
            raise UsageError(
                "--fs-read needs --profile local (or extended)", hint="strict reads the vault only"
            )
        if self.net_allow and self.profile != "extended":
            raise UsageError("--net-allow needs --profile extended", hint="only extended may fetch URLs")
        folders = []
        for folder in self.fs_read:
            path = Path(folder).expanduser()
            if not path.is_dir():
                raise UsageError(
                    f"--fs-read {folder}: no such folder", hint="give folders the scripts may read"
                )
            folders.append(str(path.resolve()))
        object.__setattr__(self, "fs_read", tuple(folders))
        if offline_env():
            object.__setattr__(self, "offline", True)
        if not self.offline:
            return
        if self.provider not in (None, *LOCAL_PROVIDERS):
            refuse_offline(f"the {self.provider} provider (a model API)", offline=True)
        if self.net_allow:
            refuse_offline("--net-allow (HTTP from the sandbox)", offline=True)
        for vault in self.vaults:
            if remote_scheme(vault) and "://" in vault and not _loopback_url(vault):
                refuse_offline(f"the vault {vault} on another host", offline=True)

    def _check_software_options(self) -> None:
        if self.verify not in VERIFY_LEVELS:
            raise UsageError(
                f"unknown verification level {self.verify!r}", hint=f"use one of {', '.join(VERIFY_LEVELS)}"
            )
        for name in ("block_on", "warn_only"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = tuple(v.strip() for v in value.split(",") if v.strip())
            object.__setattr__(self, name, tuple(value))
        if self.tests is not None and self.tests not in TEST_MODES:
            raise UsageError(f"unknown test mode {self.tests!r}", hint=f"use one of {', '.join(TEST_MODES)}")
        if self.write_files and not self.output:
            raise UsageError(
                "--write-files needs the folder to write into",
                hint="add --output DIR (nothing is written elsewhere)",
            )
        if self.output and not self.write_files:
            raise UsageError(
                f"--output {self.output} is given without --write-files",
                hint="add --write-files to write the code there (without it a run only keeps the manifest)",
            )
        if self.output:
            out = Path(self.output).expanduser()
            if out.exists() and not out.is_dir():
                raise UsageError(
                    f"--output {out} is a file, not a folder", hint="give a folder to write into"
                )
            object.__setattr__(self, "output", str(out.resolve()))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["vaults"] = list(self.vaults)
        if self.store_url:  # a password in a Redis URL must never reach the history
            data["store_url"] = re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", self.store_url)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        budget_fields = {f.name for f in fields(Budgets)}
        # Manifests from other versions may carry budget fields this one does not know: ignore those.
        values["budgets"] = Budgets(
            **{k: v for k, v in values.get("budgets", {}).items() if k in budget_fields}
        )
        values["vaults"] = tuple(values["vaults"])
        for name in ("block_on", "warn_only", "fs_read", "net_allow", "checkpoint_on"):
            values[name] = tuple(values.get(name, ()))
        values["prices"] = {k: tuple(v) for k, v in values.get("prices", {}).items()}
        return cls(**values)

    def with_budgets(self, **changes: Any) -> RunConfig:
        return replace(self, budgets=replace(self.budgets, **changes))
