"""anywidget widgets for Shad in notebooks: ``DagExplorer``, the live explorer of a run's DAG,
``CheckpointWidget``, a paused node's Approve / Edit / Hint / Skip / Stop, and ``ApprovalWidget``, a
delete or publish from the approval queue with Approve / Reject.

JS and CSS live in ``widgets/static/`` and load with the widget: nothing is fetched from the network.
"""

from __future__ import annotations

from ._approvals import ApprovalWidget
from ._checkpoint import CheckpointWidget
from ._dag_explorer import DagExplorer

__all__ = ["ApprovalWidget", "CheckpointWidget", "DagExplorer"]
