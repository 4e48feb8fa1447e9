"""engine.runs._run: a run read back from its history folder, also when its process was killed early."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _demo import DEMO

from engine import RunConfig
from engine.runs import Run, run

pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return Path(shutil.copytree(DEMO, tmp_path / "vault"))


def test_a_run_killed_before_its_strategy_file_landed_still_knows_its_strategy(vault: Path) -> None:
    """Decision files are written on the history's writer thread; a kill can come before one lands.
    The STRATEGY_CHOSEN event (appended at once) says the strategy too."""
    config = RunConfig("Compare light and dark roasts.", (str(vault),), provider="offline", code_mode=False)
    done = run(config)
    assert done.strategy
    assert Run.load(done.id).strategy == done.strategy
    (done.history.dir / "final.summary.json").unlink()  # as a run killed early leaves it
    (done.history.dir / "decisions" / "strategy.json").unlink()
    assert Run.load(done.id).strategy == done.strategy
