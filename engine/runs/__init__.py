"""Runs: the orchestrator that carries one goal from plan to cited report, and what it is made of.

``orchestrator`` reads as one whole run; its collaborators take the run's context: model calls and
budgets (``_model_calls``, ``budget``, ``scheduler``), the cache (``cache``, ``_cache_steps``), human
checkpoints (``checkpoints``, ``_checkpoint_steps``), resume (``_resume_plan``), the DAG (``dag``) and the
report (``_report``). ``arun`` / ``aresume`` / ``areplay`` are the only ways in.
"""

from __future__ import annotations

from ._api import areplay, aresume, arun, replay, resume, run, start_run
from ._run import EXIT_CODES, Run, RunStatus

__all__ = [
    "EXIT_CODES",
    "Run",
    "RunStatus",
    "areplay",
    "aresume",
    "arun",
    "replay",
    "resume",
    "run",
    "start_run",
]
