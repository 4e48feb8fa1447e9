"""The restricted-Python policy of Code Mode: compile rules, guards and the builtins a script sees.

Loaded inside the sandbox child (standard library and RestrictedPython only). It is one layer of
several: the process boundary, rlimits and seccomp hold even if a guard here were bypassed. Its parts:
``_recorder`` (what a run records), ``_compile`` (what is refused before a script runs) and ``_guards``
(what is checked while it runs); this module is the one the rest of Code Mode imports them from.
"""

from __future__ import annotations

from ._compile import ScriptCompileError, compile_script, script_line
from ._guards import SCRIPT_MODULE, Guards
from ._recorder import MAX_MESSAGE, Recorder, SandboxLimit, SandboxViolation

__all__ = [
    "MAX_MESSAGE",
    "SCRIPT_MODULE",
    "Guards",
    "Recorder",
    "SandboxLimit",
    "SandboxViolation",
    "ScriptCompileError",
    "compile_script",
    "script_line",
]
