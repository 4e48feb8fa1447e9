"""anywidget widgets for Shad in notebooks: ``DagExplorer``, the live explorer of a run's DAG, and
``CheckpointWidget``, a paused node's Approve / Edit / Hint / Skip / Stop.

JS and CSS live in ``widgets/static/`` and load with the widget: nothing is fetched from the network.
"""

from __future__ import annotations

from ._checkpoint import CheckpointWidget
from ._dag_explorer import DagExplorer

__all__ = ["CheckpointWidget", "DagExplorer"]
