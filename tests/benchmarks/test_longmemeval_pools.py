"""LongMemEval's pools for the fit, read question by question into one file and resumed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.retrieval.longmemeval_pools import main, read_saved

HERE = Path(__file__).parent


@pytest.mark.model
def test_longmemeval_pools_are_written_per_question_and_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tiny = HERE / "tiny_longmemeval.json"
    out = tmp_path / "pools.pkl"
    main(["--data", str(tiny), "--out", str(out), "--questions", "2"])
    first = read_saved(out)
    assert [p.group for p in first] == ["q_food", "q_train"]
    # Run again on the same file: only the question it lacks is filled, appended in order.
    main(["--data", str(tiny), "--out", str(out)])
    again = read_saved(out)
    assert [p.group for p in again] == ["q_food", "q_train", "q_pet_abs"]
    assert all(
        np.array_equal(a.similarity, b.similarity) for a, b in zip(first, again, strict=False)
    )
    printed = capsys.readouterr().out
    assert "2 of 3 questions already" in printed and printed.count("saved") == 3
    assert not out.with_name("pools.pkl.partial").exists()
    out.write_bytes(b"\x80\x04N.")  # a pickled None: not a file of pools
    with pytest.raises(SystemExit, match="holds no list of pools"):
        main(["--data", str(tiny), "--out", str(out)])
