"""The embedding-only evaluation tools through the real MCP client and the real model."""

from __future__ import annotations

from typing import Any

import anyio
import mcp
import pytest

from tests.server.mcp_scenario import error_of, text_of

REPETITIVE = (
    "The build failed because the cache was stale. The cache was stale, so the build failed. "
    "A stale cache made the build fail. The build failed since the cache had gone stale."
)
VARIED = (
    "The build failed because the cache was stale. Penguins huddle together to survive "
    "Antarctic winters. The treaty was signed in 1648 after thirty years of war. "
    "Sourdough needs a starter fed with flour and water."
)


async def call_raw(client: mcp.Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return dict(result.structured_content)


async def test_drift_is_small_for_paraphrases_and_large_for_unrelated_texts(
    client: mcp.Client,
) -> None:
    with anyio.fail_after(60):
        same = await call_raw(
            client, "calculate_drift", text_a="Delete the file.", text_b="Delete the file."
        )
        close = await call_raw(
            client, "calculate_drift", text_a="Delete the file.", text_b="Remove that file, please."
        )
        far = await call_raw(
            client,
            "calculate_drift",
            text_a="Delete the file.",
            text_b="Penguins live in Antarctica.",
        )
    assert same["result"] == pytest.approx(0.0, abs=1e-5)
    assert 0.0 < close["result"] < far["result"] <= 2.0


async def test_variants_are_measured_from_the_baseline_and_pairwise(client: mcp.Client) -> None:
    variants = {
        "imperative": "Delete the file report.pdf.",
        "polite": "Could you please delete the file report.pdf?",
        "passive": "The file report.pdf should be deleted.",
        "unrelated": "Summarize the quarterly sales figures.",
    }
    with anyio.fail_after(60):
        found = await call_raw(
            client, "analyze_variants", variants=variants, constraint_name="deletion"
        )
        message = await error_of(
            client, "analyze_variants", variants=variants, baseline_label="formal"
        )
        lonely = await error_of(client, "analyze_variants", variants={"imperative": "Delete it."})
    assert (found["constraint_name"], found["baseline_label"], found["variants_count"]) == (
        "deletion",
        "imperative",
        4,
    )
    distances = found["from_baseline"]
    assert isinstance(distances, dict) and set(distances) == {"polite", "passive", "unrelated"}
    assert max(distances, key=distances.__getitem__) == "unrelated"
    pairwise = found["pairwise"]
    assert isinstance(pairwise, dict) and len(pairwise) == 6
    assert pairwise["(imperative, polite)"] == distances["polite"]
    recommendations = found["recommendations"]
    assert isinstance(recommendations, list)
    assert recommendations[0] == {
        "variant": "unrelated",
        "distance": distances["unrelated"],
        "text": variants["unrelated"],
    }
    assert "baseline_label 'formal' is not a variant" in message and "'polite'" in message
    assert "variants" in lonely


async def test_a_text_that_restates_itself_stalls_and_circles(client: mcp.Client) -> None:
    with anyio.fail_after(60):
        circling = await call_raw(
            client, "analyze_trajectory", text=REPETITIVE, include_sentences=True
        )
        moving = await call_raw(client, "analyze_trajectory", text=VARIED)
        short = await error_of(client, "analyze_trajectory", text="Only one sentence here.")
        bad = await error_of(client, "analyze_trajectory", text=VARIED, acceleration_threshold=-1)
    assert circling["n_sentences"] == moving["n_sentences"] == 4
    assert circling["mean_velocity"] < moving["mean_velocity"]
    assert circling["heller_score"] > moving["heller_score"]
    sentences = circling["sentences"]
    assert isinstance(sentences, list) and sentences[0]["velocity_from_previous"] is None
    assert sentences[1]["text"] == "The cache was stale, so the build failed."
    assert moving["sentences"] is None
    assert "at least two sentences; found 1" in short
    assert "acceleration_threshold" in bad


async def test_a_text_compared_with_itself_fits_perfectly(client: mcp.Client) -> None:
    with anyio.fail_after(60):
        itself = await call_raw(
            client, "compare_trajectories", golden_text=VARIED, synthetic_text=VARIED
        )
        other = await call_raw(
            client, "compare_trajectories", golden_text=VARIED, synthetic_text=REPETITIVE
        )
    assert itself["fitness_score"] == 0.0
    assert itself["interpretation"] == "Close structural match"
    assert itself["golden_summary"] == itself["synthetic_summary"]
    assert other["fitness_score"] > itself["fitness_score"]
    assert other["synthetic_summary"]["n_sentences"] == 4
