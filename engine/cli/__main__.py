"""``python -m engine.cli``: the ``shad`` command."""

from __future__ import annotations

import sys

from . import main

sys.exit(main())
