"""Code Mode: run model-written retrieval scripts in a real sandbox.

``Sandbox(vaults).run(script)`` compiles the script under a restricted-Python policy inside a fresh,
locked-down process (bubblewrap when usable, else a plain subprocess; rlimits and seccomp in both),
answers its ``obsidian.*`` calls from the trusted parent, and returns ``SandboxResult`` or raises a
``SandboxError`` whose ``kind`` is "blocked", "limited" or "error".
"""

from __future__ import annotations

from ._broker import PROFILES, Budgets
from ._errors import SandboxBlocked, SandboxError, SandboxLimited, SandboxScriptError, SandboxUnavailable
from ._net import NetPolicy
from ._sandbox import DEFAULT_TIMEOUT, Sandbox, SandboxResult
from ._zygote import bwrap_status

__all__ = [
    "DEFAULT_TIMEOUT",
    "PROFILES",
    "Budgets",
    "NetPolicy",
    "Sandbox",
    "SandboxBlocked",
    "SandboxError",
    "SandboxLimited",
    "SandboxResult",
    "SandboxScriptError",
    "SandboxUnavailable",
    "bwrap_status",
]
