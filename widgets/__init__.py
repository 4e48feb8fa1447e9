"""anywidget widgets: the live DAG explorer, checkpoints, progress (arrive with the Jupyter issue)."""
