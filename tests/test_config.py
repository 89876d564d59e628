"""Settings: file lookup, env precedence, presets, and errors that name key, value and choices."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from ralph_context.config import Settings
from ralph_context.errors import ConfigError
from ralph_context.models import ContextType

REPO = Path(__file__).resolve().parents[1]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_match_the_seed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.load(None)
    assert settings.server.transport == "stdio"
    assert settings.server.port == 8765
    assert settings.storage.backend == "lancedb"
    assert settings.storage.max_size_mb == 500
    assert settings.retrieval.max_items_per_query == 10
    # Fitted with the match's formula (benchmarks/retrieval/fit.py); the seed had 0.3 on the
    # former additive scale.
    assert settings.retrieval.min_relevance_score == 0.12
    assert settings.retrieval.min_relative_score == 0.2
    assert settings.retrieval.context_types == (
        ContextType.SKILL,
        ContextType.ERROR,
        ContextType.ITERATION,
    )
    assert settings.lifecycle.prune_after_iterations == 100
    assert settings.scoring.lexical_weight == 0.5  # fitted: benchmarks/retrieval/fit.py
    assert settings.scoring.recency_floor == 0.75
    assert settings.lifecycle.ageless_types == (ContextType.SKILL, ContextType.TASK)
    assert settings.store_path() == tmp_path / ".agent/context"


def test_the_repository_example_loads_and_documents_every_key() -> None:
    settings = Settings.load(REPO / "ralph.yaml")
    text = (REPO / "ralph.yaml").read_text(encoding="utf-8")
    for section in Settings._sections:
        for key in getattr(settings, section).model_dump():
            assert f"{key}:" in text, f"ralph.yaml does not document {section}.{key}"
    assert "preset:" in text


def test_file_in_working_directory_is_found_and_paths_resolve_next_to_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write(
        tmp_path / "ralph.yml",
        "learning:\n  mcp_context:\n    storage:\n      path: mem/ctx\n",
    )
    monkeypatch.chdir(tmp_path)
    settings = Settings.load(None)
    assert settings.source == tmp_path / "ralph.yml"
    assert settings.store_path() == tmp_path / "mem/ctx"


def test_environment_beats_the_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.yaml",
        "learning:\n  mcp_context:\n    retrieval:\n      max_items_per_query: 7\n"
        "      min_relevance_score: 0.5\n",
    )
    monkeypatch.setenv("RALPH_CONTEXT_RETRIEVAL__MAX_ITEMS_PER_QUERY", "12")
    settings = Settings.load(config)
    assert settings.retrieval.max_items_per_query == 12
    assert settings.retrieval.min_relevance_score == 0.5


def test_config_path_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = write(
        tmp_path / "x.yaml", "learning:\n  mcp_context:\n    server:\n      port: 9000\n"
    )
    monkeypatch.setenv("RALPH_CONTEXT_CONFIG", str(config))
    assert Settings.load(None).server.port == 9000


def test_a_ralph_v2_agents_server_uses_the_loop_workspaces_ralph_yml(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    write(
        workspace / "ralph.yml",
        "cli:\n  backend: claude\nlearning:\n  mcp_context:\n    storage:\n"
        "      path: .ralph/context-store\n",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # an agent may start its servers in any folder
    monkeypatch.delenv("RALPH_CONTEXT_CONFIG", raising=False)
    monkeypatch.setenv("RALPH_WORKSPACE_ROOT", str(workspace))
    assert Settings.load(None).store_path() == workspace / ".ralph" / "context-store"
    monkeypatch.setenv("RALPH_CONTEXT_CONFIG", str(write(tmp_path / "x.yaml", "")))
    assert Settings.load(None).source == tmp_path / "x.yaml"  # an explicit file wins


@pytest.mark.parametrize(
    ("preset", "persistence", "size", "items", "summarize"),
    [
        ("minimal", "session", 100, 5, 10),
        ("standard", "project", 500, 10, 20),
        ("aggressive", "global", 2000, 25, 50),
    ],
)
def test_presets_follow_the_seed_table(
    tmp_path: Path, preset: str, persistence: str, size: int, items: int, summarize: int
) -> None:
    config = write(tmp_path / "p.yaml", f"learning:\n  mcp_context:\n    preset: {preset}\n")
    settings = Settings.load(config)
    assert settings.storage.persistence == persistence
    assert settings.storage.max_size_mb == size
    assert settings.retrieval.max_items_per_query == items
    assert settings.lifecycle.summarize_after_iterations == summarize
    assert (
        settings.lifecycle.summarize_after_iterations
        < settings.lifecycle.archive_after_iterations
        < settings.lifecycle.prune_after_iterations
    )


def test_explicit_keys_beat_the_preset(tmp_path: Path) -> None:
    config = write(
        tmp_path / "p.yaml",
        "learning:\n  mcp_context:\n    preset: minimal\n    retrieval:\n"
        "      max_items_per_query: 9\n",
    )
    settings = Settings.load(config)
    assert settings.retrieval.max_items_per_query == 9
    assert settings.storage.persistence == "session"
    assert settings.is_ephemeral


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        (
            "storage:\n      backend: postgres\n",
            ["learning.mcp_context.storage.backend", "'postgres'", "'lancedb' or 'memory'"],
        ),
        (
            "server:\n      port: 70000\n",
            ["learning.mcp_context.server.port", "70000", "less than or equal to 65535"],
        ),
        (
            "retrieval:\n      context_types: [skill, memo]\n",
            ["learning.mcp_context.retrieval.context_types.1", "'memo'", "'task'"],
        ),
        (
            "storage:\n      bogus: 1\n",
            ["learning.mcp_context.storage.bogus", "unknown key", "allowed keys here: backend"],
        ),
        (
            "scoring:\n      semantic_weight: 0.9\n",
            ["learning.mcp_context.scoring", "semantic_weight", "recency_floor"],
        ),
        (
            "lifecycle:\n      archive_after_iterations: 10\n",
            ["learning.mcp_context.lifecycle", "summarize_after_iterations (20) <"],
        ),
        ("preset: huge\n", ["learning.mcp_context.preset", "'huge'", "'minimal'"]),
    ],
)
def test_invalid_values_name_the_key_the_value_and_what_is_allowed(
    tmp_path: Path, yaml_text: str, expected: list[str]
) -> None:
    indented = "\n".join("    " + line if line else line for line in yaml_text.splitlines())
    config = write(tmp_path / "bad.yaml", f"learning:\n  mcp_context:\n{indented}\n")
    with pytest.raises(ConfigError) as raised:
        Settings.load(config)
    for fragment in expected:
        assert fragment in str(raised.value)


def test_unparseable_yaml_and_missing_file_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        Settings.load(write(tmp_path / "y.yaml", "learning: [unclosed\n"))
    with pytest.raises(ConfigError, match="does not exist"):
        Settings.load(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match="must be a mapping"):
        Settings.load(write(tmp_path / "z.yaml", "learning:\n  mcp_context: 5\n"))


def test_cli_exits_non_zero_on_a_bad_config_without_creating_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    config = write(
        tmp_path / "bad.yaml",
        f"learning:\n  mcp_context:\n    storage:\n      path: {store}\n      max_size_mb: -5\n",
    )
    done = subprocess.run(
        [sys.executable, "-m", "ralph_context", "store", "hello", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "storage.max_size_mb" in done.stderr
    assert "-5" in done.stderr
    assert done.stdout == ""
    assert not store.exists()


def test_the_top_level_learning_switch_turns_the_block_off(tmp_path: Path) -> None:
    on = write(tmp_path / "on.yaml", "learning:\n  enabled: true\n  mcp_context: {}\n")
    off = write(
        tmp_path / "off.yaml", "learning:\n  enabled: false\n  mcp_context:\n    enabled: true\n"
    )
    inner = write(tmp_path / "inner.yaml", "learning:\n  mcp_context:\n    enabled: false\n")
    assert Settings.load(on).enabled
    assert not Settings.load(off).enabled
    assert not Settings.load(inner).enabled


def load_block(tmp_path: Path, block: str) -> Settings:
    """Settings from a file whose `mcp_context` block is ``block`` (indented by the caller)."""
    return Settings.load(write(tmp_path / "c.yaml", f"learning:\n  mcp_context:\n{block}"))


def test_the_repository_example_documents_every_top_level_key() -> None:
    text = (REPO / "ralph.yaml").read_text(encoding="utf-8")
    for key in Settings.model_fields:
        assert f"    {key}:" in text, f"ralph.yaml does not document {key}"


def test_the_commented_prompts_example_in_ralph_yaml_loads(tmp_path: Path) -> None:
    lines = (REPO / "ralph.yaml").read_text(encoding="utf-8").splitlines()
    start = lines.index("    # prompts:")
    example = []
    for line in lines[start:]:
        if not line.startswith("    #"):
            break
        example.append("    " + line.removeprefix("    # "))
    settings = load_block(tmp_path, "\n".join(example) + "\n")
    assert [prompt.name for prompt in settings.prompts] == ["review", "changelog"]
    assert [argument.required for argument in settings.prompts[0].arguments] == [True, False]


def test_prompts_accept_capitalized_keys_and_keep_them_lowercase(tmp_path: Path) -> None:
    settings = load_block(
        tmp_path,
        "    prompts:\n"
        "      - Name: review\n"
        "        Description: Review a file\n"
        "        Type: text\n"
        "        Content: 'Review {file}'\n"
        "        Arguments:\n"
        "          - {Name: file, Description: the path, Required: true}\n"
        "          - {name: focus}\n",
    )
    (prompt,) = settings.prompts
    assert (prompt.name, prompt.description, prompt.type) == ("review", "Review a file", "text")
    assert prompt.content == "Review {file}"
    assert [a.model_dump() for a in prompt.arguments] == [
        {"name": "file", "description": "the path", "required": True},
        {"name": "focus", "description": "", "required": False},
    ]


def test_prompts_default_to_an_empty_list_and_items_to_auto_type(tmp_path: Path) -> None:
    assert load_block(tmp_path, "    enabled: true\n").prompts == ()
    settings = load_block(tmp_path, "    prompts:\n      - {name: hi, content: hello}\n")
    assert settings.prompts[0].type == "auto"
    assert settings.prompts[0].arguments == ()


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        (
            "      - {name: review, content: a}\n      - {name: review, content: b}\n",
            ["learning.mcp_context.prompts:", "'review' is used by items 0 and 1", "unique"],
        ),
        (
            "      - {name: review, content: a, arguments: [{name: x}, {Name: x}]}\n",
            ["learning.mcp_context.prompts.0:", "declares argument 'x' more than once"],
        ),
        (
            "      - {name: Search, content: a}\n",
            ["learning.mcp_context.prompts.0.name", "'Search' is a built-in prompt"],
        ),
        (
            "      - {name: review, Name: other, content: a}\n",
            ["learning.mcp_context.prompts.0:", "both 'name' and 'Name' are set"],
        ),
        (
            "      - {name: review, content: a, arguments: [{name: x, Required: 1, required: 0}]}"
            "\n",
            ["prompts.0.arguments.0:", "both 'required' and 'Required' are set"],
        ),
        (
            "      - {name: my review, content: a}\n",
            ["prompts.0.name = 'my review'", "no whitespace", "RALPH_CONTEXT_PROMPTS, as JSON"],
        ),
        (
            "      - {name: review, content: '  '}\n",
            ["prompts.0.content", "must be a template or a 'module:function' reference"],
        ),
        (
            "      - {name: review, content: a, arguments: [{name: 'a b'}]}\n",
            ["prompts.0.arguments.0.name = 'a b'", "letters, digits"],
        ),
        (
            "      - {name: review, content: a, type: python}\n",
            ["prompts.0.type = 'python'", "'text', 'function' or 'auto'"],
        ),
        (
            "      - {name: review, content: a, arguments: [{name: x, optional: true}]}\n",
            ["prompts.0.arguments.0.optional: unknown key", "allowed keys here: name, descr"],
        ),
        (
            "      - {name: review, body: a}\n",
            ["prompts.0.body: unknown key", "allowed keys here: name, description, arguments"],
        ),
    ],
)
def test_invalid_prompt_definitions_name_the_item_and_the_problem(
    tmp_path: Path, items: str, expected: list[str]
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_block(tmp_path, "    prompts:\n" + items)
    for fragment in expected:
        assert fragment in str(raised.value)


def test_prompt_data_is_deprecated_with_a_warning_and_an_error_pointing_to_prompts(
    tmp_path: Path,
) -> None:
    block = "    prompt_data:\n      - {name: review, content: a}\n"
    with capture_logs() as logs, pytest.raises(ConfigError) as raised:
        load_block(tmp_path, block)
    message = str(raised.value)
    assert "learning.mcp_context.prompt_data" in message
    assert "deprecated" in message
    assert "rename it to learning.mcp_context.prompts" in message
    assert "unknown key" not in message
    assert [(log["log_level"], log["event"]) for log in logs] == [
        ("warning", "deprecated_config_key")
    ]
    assert logs[0]["replacement"] == "learning.mcp_context.prompts"


def test_calls_in_flight_default_to_six_per_core() -> None:
    from ralph_context.config import ServerSettings

    cores = os.cpu_count() or 2
    assert ServerSettings().in_flight_bound == 6 * cores
    assert ServerSettings(max_in_flight=3).in_flight_bound == 3
