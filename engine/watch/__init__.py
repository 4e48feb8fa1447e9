"""Task notes and webhooks (issue 15, I7): `shad watch` runs pending task notes of a vault.

``find_tasks`` finds the notes with ``type: task`` and ``status: pending`` (never under ``Shad/``, never
one Shad wrote, never one whose ``run_id`` is set); ``Watcher`` claims each (``processing``), runs it and
marks it ``complete`` (a link to the report) or ``failed`` (the reason), through the vault's one writer;
``check_webhooks`` / ``deliver`` send each outcome, signed, to allow-listed URLs.
"""

from ._tasks import TASK_OPTIONS, Skipped, TaskNote, find_tasks, task_goal
from ._watcher import PassResult, TaskOutcome, Watcher, WatchOptions
from ._webhooks import Delivery, WebhookTarget, check_webhooks, deliver, sign

__all__ = [
    "TASK_OPTIONS",
    "Delivery",
    "PassResult",
    "Skipped",
    "TaskNote",
    "TaskOutcome",
    "WatchOptions",
    "Watcher",
    "WebhookTarget",
    "check_webhooks",
    "deliver",
    "find_tasks",
    "sign",
    "task_goal",
]
