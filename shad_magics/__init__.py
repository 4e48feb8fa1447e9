"""``%%shad`` / ``%shad`` IPython magics (arrive with the Jupyter issue)."""
