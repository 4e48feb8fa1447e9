"""The ``shad`` Jupyter kernel: an IPython kernel where a cell can be a goal.

Arrives with the Jupyter issue."""
