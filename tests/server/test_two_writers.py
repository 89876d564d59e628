"""Two client processes write one store at once through its server: nothing is lost and
nothing is stored twice (the script's run does 2 x 2,000)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.writers.run import two_writers


def test_two_writers_through_the_server_lose_nothing_and_duplicate_nothing(
    tmp_path: Path,
) -> None:
    report = two_writers(tmp_path / "store", per_writer=150)
    assert report["acknowledged"] == 300
    assert report["stored"] == 300
    assert report["lost"] == 0
    assert report["duplicated"] == 0
