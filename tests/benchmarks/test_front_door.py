"""``python -m benchmarks.front_door.run`` end to end, once: every figure is there, the
first hook pushed the note and each SIGINT ended ``serve`` with exit 0."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.front_door.run import main


def test_the_front_door_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    main(["--repeats", "1", "--out", str(tmp_path)])
    (run,) = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["runs"]
    assert set(run) == {"load", "first_hook", "sigint_stdio", "sigint_http", "stats"}
    assert run["first_hook"]["pushed"] is True
    assert run["sigint_stdio"]["code"] == 0 and run["sigint_http"]["code"] == 0
    assert run["stats"]["wall_s"] > 0
