"""ACE skillbook files: both formats read, feedback written back without losing anything."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

import anyio
import pytest

from ralph_context import Engine
from ralph_context.errors import ConfigError, ItemNotFound
from ralph_context.skillbook.formats import read_skillbook, record_feedback, usefulness
from tests.helpers import Loader, SettingsFactory

V1: dict[str, object] = {
    "skills": {
        "debug-00001": {
            "id": "debug-00001",
            "section": "Debugging",
            "content": "Run the failing test alone before changing code",
            "justification": "Isolates the failure",
            "evidence": "Saved three iterations on the billing task",
            "helpful": 4,
            "harmful": 1,
            "neutral": 0,
            "created_at": "2026-01-01T00:00:00+00:00",
            "updated_at": "2026-01-02T00:00:00+00:00",
            "embedding": None,
            "status": "active",
            "sources": [{"trace": "t-17"}],
        },
        "debug-00002": {
            "id": "debug-00002",
            "section": "Debugging",
            "content": "Restart the machine",
            "helpful": 0,
            "harmful": 5,
            "neutral": 0,
            "status": "invalid",
        },
    },
    "sections": {"Debugging": ["debug-00001", "debug-00002"]},
    "next_id": 3,
    "similarity_decisions": {},
}

V2: dict[str, object] = {
    "schema_version": "2",
    "skills": [
        {
            "id": "deps-001",
            "section": "Dependencies",
            "keywords": ["pip", "requirements"],
            "issue": "ModuleNotFoundError after adding an import",
            "insight": "Add the package to requirements.txt and reinstall",
            "helpful_count": 2,
            "harmful_count": 0,
            "neutral_count": 1,
            "active": True,
            "x_custom": {"kept": True},
        },
        {
            "id": "deps-002",
            "section": "Dependencies",
            "keywords": [],
            "issue": "old",
            "insight": "Pin everything forever",
            "helpful_count": 0,
            "harmful_count": 3,
            "neutral_count": 0,
            "active": False,
        },
    ],
    "meta": {"generator": "ace"},
}


def write(path: Path, document: Mapping[str, object], indent: int | None) -> str:
    text = json.dumps(document, indent=indent, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


def test_both_formats_read_with_active_skills_and_usefulness(tmp_path: Path) -> None:
    old = tmp_path / "v1.json"
    write(old, V1, 2)
    book = read_skillbook(old)
    assert book.version == "1"
    (active,) = book.active
    assert active.text == "Run the failing test alone before changing code"
    assert (active.helpful, active.harmful, active.section) == (4, 1, "Debugging")
    assert active.usefulness == pytest.approx(5 / 7)

    new = tmp_path / "v2.json"
    write(new, V2, 4)
    book = read_skillbook(new)
    assert book.version == "2"
    (active,) = book.active
    assert active.id == "deps-001" and active.keywords == ("pip", "requirements")
    assert "requirements.txt" in active.text and "ModuleNotFoundError" in active.text
    assert usefulness(0, 0, 0) == 0.5  # a skill nobody rated starts like any item


@pytest.mark.parametrize(("document", "indent"), [(V1, 2), (V2, 4), (V2, None)])
def test_feedback_round_trips_without_losing_fields(
    tmp_path: Path, document: dict[str, object], indent: int | None
) -> None:
    path = tmp_path / "skillbook.json"
    before = write(path, document, indent)
    skill_id = read_skillbook(path).active[0].id
    helpful = record_feedback(path, skill_id, helpful=True)
    harmful = record_feedback(path, skill_id, helpful=False)
    after = json.loads(path.read_text(encoding="utf-8"))

    original = json.loads(before)
    counts = (
        ("helpful", "harmful")
        if "schema_version" not in original
        else (
            "helpful_count",
            "harmful_count",
        )
    )
    skills_before = original["skills"]
    skills_after = after["skills"]
    entry_before = skills_before[skill_id] if isinstance(skills_before, dict) else skills_before[0]
    entry_after = skills_after[skill_id] if isinstance(skills_after, dict) else skills_after[0]
    assert entry_after[counts[0]] == entry_before[counts[0]] + 1
    assert entry_after[counts[1]] == entry_before[counts[1]] + 1
    assert (harmful.helpful, harmful.harmful) == (helpful.helpful, helpful.harmful + 1)
    # Everything else is as it was: other skills, unknown keys, key order, layout.
    for key in set(entry_before) - {*counts, "updated_at"}:
        assert entry_after[key] == entry_before[key]
    assert list(entry_after) == list(entry_before)
    assert {k: v for k, v in after.items() if k != "skills"} == {
        k: v for k, v in original.items() if k != "skills"
    }
    assert len(skills_after) == len(skills_before)
    text = path.read_text(encoding="utf-8")
    assert text == json.dumps(after, indent=indent, ensure_ascii=False) + "\n"
    assert not list(tmp_path.glob(".*.tmp"))  # no temp file left behind


def test_bad_files_and_ids_are_clear_errors(tmp_path: Path) -> None:
    path = tmp_path / "skillbook.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="not readable JSON"):
        read_skillbook(path)
    write(path, {"schema_version": "7", "skills": []}, 2)
    with pytest.raises(ConfigError, match="schema_version '7' is not supported"):
        read_skillbook(path)
    text = write(path, V2, 2)
    with pytest.raises(ItemNotFound, match="no skill 'nope'"):
        record_feedback(path, "nope", helpful=True)
    assert path.read_text(encoding="utf-8") == text


async def test_engine_indexes_active_skills_resyncs_on_change_and_writes_feedback_back(
    tmp_path: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    path = tmp_path / "skillbook.json"
    write(path, V2, 2)
    settings = make_settings(skillbook={"path": str(path)})
    with anyio.fail_after(60):
        async with Engine(settings, model_loader=shared_model) as engine:
            (skill,) = await engine.skills(min_usefulness=0.0)
            assert skill.id == "skillbook:deps-001"
            assert skill.usefulness_score == pytest.approx(usefulness(2, 0, 1))
            assert {"ace-skillbook", "Dependencies", "pip"} <= set(skill.tags)
            found = await engine.search("No module named yaml after I imported it")
            assert found.items[0].item.id == "skillbook:deps-001"

            # Feedback lands in the file's counts, and the file keeps its shape.
            await engine.mark_useful("skillbook:deps-001", helpful=True)
            entry = json.loads(path.read_text(encoding="utf-8"))["skills"][0]
            assert (entry["helpful_count"], entry["x_custom"]) == (3, {"kept": True})

            # ACE edits the file: one insight rewritten, one skill added, one deactivated.
            document = json.loads(path.read_text(encoding="utf-8"))
            document["skills"][0]["insight"] = "Use a lock file and reinstall from it"
            document["skills"][1]["active"] = True
            document["skills"].append(
                {"id": "git-001", "insight": "Commit before refactoring", "active": False}
            )
            path.write_text(json.dumps(document, indent=2), encoding="utf-8")
            os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
            skills = {s.id: s for s in await engine.skills(min_usefulness=0.0)}
            assert set(skills) == {"skillbook:deps-001", "skillbook:deps-002"}
            assert skills["skillbook:deps-001"].content.startswith("Use a lock file")
            assert skills["skillbook:deps-002"].usefulness_score == pytest.approx(0.2)

            path.unlink()  # the skillbook is gone: so are its items
            assert await engine.skills(min_usefulness=0.0) == []
