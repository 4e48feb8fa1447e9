"""anywidget widgets for Shad in notebooks: ``DagExplorer``, the live explorer of a run's DAG.

JS and CSS live in ``widgets/static/`` and load with the widget: nothing is fetched from the network.
"""

from __future__ import annotations

from ._dag_explorer import DagExplorer

__all__ = ["DagExplorer"]
