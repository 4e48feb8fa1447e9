"""The ``shad`` Jupyter kernel: an IPython kernel where a cell can be a goal (arrives with the Jupyter issue)."""
