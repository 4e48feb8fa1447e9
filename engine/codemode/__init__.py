"""Code Mode: the sandbox that runs model-written retrieval scripts (arrives with the Code Mode issue)."""
