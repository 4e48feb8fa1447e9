"""``Sandbox``: run model-written scripts against the vault, one fresh locked-down process per script.

The parent (this module) owns the vault and the broker, enforces the wall clock (SIGKILL of the child's
process group) and the output cap, and turns every way a script can end into a ``SandboxResult`` or a
``SandboxError`` of kind blocked / limited / error.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from ..vault import Vault, VaultSet
from ._broker import PROFILES, Broker, Budgets, FsRoot
from ._errors import SandboxLimited, SandboxUnavailable, error_for
from ._net import NetPolicy
from ._run import ScriptRun
from ._zygote import ISOLATIONS, Zygote, bwrap_status

__all__ = ["DEFAULT_TIMEOUT", "Sandbox", "SandboxResult"]

DEFAULT_TIMEOUT = 60.0
MAX_SCRIPT_CHARS = 256_000


@dataclass
class SandboxResult:
    """What a script returned (``__result__`` as plain JSON), what it printed, and how the run went."""

    result: Any
    stdout: str
    stats: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"result": self.result, "stdout": self.stdout, "stats": self.stats}


def _timeout(explicit: float | None) -> float:
    if explicit is not None:
        return float(explicit)
    env = os.environ.get("SHAD_SANDBOX_TIMEOUT")
    if env:
        try:
            value = float(env)
        except ValueError:
            raise UsageError(f"SHAD_SANDBOX_TIMEOUT must be a number of seconds, got {env!r}") from None
        if value > 0:
            return value
    return DEFAULT_TIMEOUT


def _vault_set(vaults: Any) -> VaultSet:
    if isinstance(vaults, VaultSet):
        return vaults
    if isinstance(vaults, (Vault, str, os.PathLike)):
        return VaultSet([vaults])
    return VaultSet(list(vaults))


class Sandbox:
    """Runs scripts against ``vaults``. ``profile``: "strict" (vault API only), "local" (+ read-only
    ``fs_read`` roots), "extended" (+ HTTP GET to ``net_allow`` hosts, done by the parent).
    ``isolation``: "auto" (bubblewrap when usable, else a plain subprocess), "bubblewrap" or "subprocess".
    Reusable: the first run starts a warm process; each script runs in a fresh fork of it."""

    def __init__(
        self,
        vaults: VaultSet | Vault | str | os.PathLike[str] | Sequence[Vault | str | os.PathLike[str]],
        profile: str = "strict",
        fs_read: Iterable[str | os.PathLike[str]] = (),
        net_allow: Iterable[str] = (),
        timeout: float | None = None,
        *,
        isolation: str = "auto",
        memory_mb: int = 512,
        output_bytes: int = 200_000,
        budgets: Budgets | None = None,
        net_policy: NetPolicy | None = None,
        exclude: Iterable[str] = (),
    ) -> None:
        if profile not in PROFILES:
            raise UsageError(
                f"unknown sandbox profile {profile!r}", hint=f"use one of: {', '.join(PROFILES)}"
            )
        roots = tuple(FsRoot.of(p) for p in fs_read)
        hosts = tuple(net_allow)
        if roots and profile == "strict":
            raise UsageError(
                "--fs-read needs --profile local (or extended)", hint="strict allows the vault only"
            )
        if (hosts or net_policy) and profile != "extended":
            raise UsageError("--net-allow needs --profile extended", hint="only extended may fetch URLs")
        net = net_policy or (NetPolicy(hosts) if hosts else None)
        self.profile = profile
        self.broker = Broker(_vault_set(vaults), profile, roots, net, budgets, exclude=tuple(exclude))
        self.vaults = self.broker.vaults
        self._timeout = timeout
        self.memory_mb = memory_mb
        self.output_bytes = output_bytes
        self.isolation, self.isolation_note = self._choose(isolation)
        self._zygote: Zygote | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._finalizer = weakref.finalize(self, _shutdown, [None])

    @staticmethod
    def _choose(requested: str) -> tuple[str, str]:
        if requested == "auto":
            requested = os.environ.get("SHAD_SANDBOX_ISOLATION", "auto") or "auto"
        if requested not in ("auto", *ISOLATIONS):
            raise UsageError(f"unknown isolation {requested!r}", hint="use auto, bubblewrap or subprocess")
        if requested == "subprocess":
            return "subprocess", "requested"
        usable, why = bwrap_status()
        if usable:
            return "bubblewrap", why
        if requested == "bubblewrap":
            raise SandboxUnavailable(f"bubblewrap isolation requested but unusable: {why}")
        return "subprocess", why

    @property
    def timeout(self) -> float:
        return _timeout(self._timeout)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._zygote is not None:
                self._zygote.close()
                self._zygote = None
            self._finalizer.detach()

    def start(self) -> float:
        """Start the warm process now (otherwise the first ``run`` does); returns milliseconds spent."""
        with self._lock:
            return self._ensure()[1]

    def _ensure(self) -> tuple[Zygote, float]:
        if self._closed:
            raise UsageError("this Sandbox is closed", hint="create a new Sandbox")
        if self._zygote is not None and self._zygote.alive():
            return self._zygote, 0.0
        if self._zygote is not None:
            self._zygote.kill()
        self._zygote = Zygote(self.isolation)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _shutdown, [self._zygote])
        return self._zygote, self._zygote.spawn_ms

    def run(self, script: str) -> SandboxResult:
        """Run one script; return its result or raise a SandboxError (blocked / limited / error)."""
        return self._run(script, raw=False)

    def _run_unrestricted(self, source: str) -> SandboxResult:
        """Tests only: run trusted probe code in a child with every OS layer on (bubblewrap, rlimits,
        seccomp) but no restricted-Python policy, to prove those layers hold on their own."""
        return self._run(source, raw=True)

    def _run(self, script: str, raw: bool) -> SandboxResult:
        if not isinstance(script, str):
            raise UsageError("the script must be a string of Python source")
        if len(script) > MAX_SCRIPT_CHARS:
            raise SandboxLimited(
                f"the script is longer than {MAX_SCRIPT_CHARS} characters", type="ScriptTooLong"
            )
        with self._lock:
            t0 = time.perf_counter()
            zygote, spawn_ms = self._ensure()
            timeout = self.timeout
            limits = {
                "cpu_seconds": int(timeout) + 1,
                "memory_bytes": self.memory_mb << 20,
                "output_bytes": self.output_bytes,
            }
            run = ScriptRun(self.broker.new_run(), zygote, script, timeout, raw)
            try:
                outcome = run.execute(limits)
            except BaseException:
                run.abort()
                raise
            finally:
                run.close()
            stats = {
                "isolation": self.isolation,
                "isolation_note": self.isolation_note,
                "seccomp": zygote.seccomp,  # the child dies rather than run without the filter it was sent
                "seccomp_source": zygote.seccomp_source,
                "profile": self.profile,
                "warm": spawn_ms == 0.0,
                "durations_ms": {
                    "total": round((time.perf_counter() - t0) * 1000, 3),
                    "spawn": round(spawn_ms, 3),
                    "compile": outcome.child_stats.get("compile_ms"),
                    "exec": outcome.child_stats.get("exec_ms"),
                    "broker": round(run.broker_ms, 3),
                },
                "broker": run.calls.stats(),
                "stdout_bytes": len(outcome.stdout_bytes),
                "violations": outcome.child_stats.get("violations") or outcome.violations,
                "limits": {
                    "timeout_s": timeout,
                    "memory_mb": self.memory_mb,
                    "output_bytes": self.output_bytes,
                },
            }
            if outcome.child_stats.get("uid") is not None:
                stats["uid"] = outcome.child_stats["uid"]
            stdout = outcome.stdout_bytes.decode("utf-8", "replace")
            if outcome.error is not None:
                kind, etype, message, line = outcome.error
                if outcome.stderr and kind == "error":
                    stats["stderr"] = outcome.stderr.decode("utf-8", "replace")[-2000:]
                raise error_for(kind, message, type=etype, stdout=stdout, stats=stats, line=line)
            stats["result_bytes"] = outcome.result_bytes
            return SandboxResult(outcome.result, stdout, stats)


def _shutdown(holder: list[Zygote | None] | Zygote | None) -> None:
    zygote = holder[0] if isinstance(holder, list) else holder
    if zygote is not None:
        zygote.kill()
