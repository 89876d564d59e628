"""``python -m benchmarks.model.costs``: what a model costs, measured on the real model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.model


def test_the_command_measures_a_model_and_writes_its_json_and_table(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "benchmarks.model.costs", "all-MiniLM-L6-v2"]
    options = ["--queries", "20", "--repeats", "1", "--out", str(tmp_path)]
    done = subprocess.run(
        [*command, *options], capture_output=True, text=True, timeout=300, check=True
    )
    (row,) = json.loads((tmp_path / "costs.json").read_text())["models"]
    assert (row["model"], row["dimension"]) == ("all-MiniLM-L6-v2", 384)
    assert 20 < row["disk_mb"] < 30, "the int8 graph and its tokenizer"
    assert row["queries"] == 20
    assert 0 < row["query_ms_p50"] <= row["query_ms_p99"]
    assert row["texts_per_s"] > 0 and row["batch_texts"] == 64
    assert row["rss_mb_serving"] > 0
    assert row["alone_vs_batch_min_cosine"] > 0.999, "a text's vector is its own"
    assert "| all-MiniLM-L6-v2 | 384 | 2" in done.stdout
