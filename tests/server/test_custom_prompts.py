"""Custom prompts: templates, function prompts, auto detection and the errors a user sees."""

from __future__ import annotations

from collections.abc import Mapping

import anyio
import pytest

from ralph_context.config import PromptSpec
from ralph_context.errors import ConfigError, InvalidInput, PromptFunctionError
from ralph_context.server.custom_prompts import (
    CustomPrompt,
    find_prompt,
    resolve_prompt,
    resolve_prompts,
)

FUNCTIONS = "tests.server.prompt_functions"


def spec(**fields: object) -> PromptSpec:
    return PromptSpec.model_validate({"name": "review", **fields})


async def render(prompt: CustomPrompt, arguments: Mapping[str, str] | None = None) -> str:
    with anyio.fail_after(5):
        return await prompt.render(arguments)


FILE_AND_FOCUS = [
    {"name": "file", "required": True},
    {"name": "focus", "description": "what to look at"},
]


async def test_a_template_fills_declared_arguments_and_keeps_every_other_brace() -> None:
    prompt = resolve_prompt(
        spec(
            arguments=FILE_AND_FOCUS,
            content='Review {file} for {focus}. Reply as {"file": "{file}", "ok": true}; {other}',
        )
    )
    assert prompt.kind == "text"
    text = await render(prompt, {"file": "a.py", "focus": "bugs"})
    assert text == 'Review a.py for bugs. Reply as {"file": "a.py", "ok": true}; {other}'


async def test_an_optional_argument_not_given_renders_as_an_empty_string() -> None:
    prompt = resolve_prompt(spec(arguments=FILE_AND_FOCUS, content="[{file}][{focus}]"))
    assert await render(prompt, {"file": "a.py"}) == "[a.py][]"


async def test_argument_values_are_inserted_literally() -> None:
    prompt = resolve_prompt(spec(arguments=FILE_AND_FOCUS, content="{file}"))
    assert await render(prompt, {"file": r"C:\new\1 {focus} \g<0>"}) == r"C:\new\1 {focus} \g<0>"


async def test_a_template_without_arguments_is_returned_verbatim() -> None:
    prompt = resolve_prompt(spec(content="Use {} and {x} as they are"))
    assert await render(prompt) == "Use {} and {x} as they are"


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        (f"{FUNCTIONS}:review", "function"),
        (f"  {FUNCTIONS}:review\n", "function"),  # a YAML block scalar's trailing newline
        ("Review {file} now", "text"),
        ("Note: check {file}", "text"),
        ("see https://example.com:8080", "text"),
    ],
)
def test_auto_type_tells_a_function_reference_from_text(content: str, kind: str) -> None:
    assert resolve_prompt(spec(arguments=FILE_AND_FOCUS, content=content)).kind == kind


async def test_type_text_keeps_reference_like_content_as_text() -> None:
    prompt = resolve_prompt(spec(type="text", content="Summary:brief"))
    assert prompt.kind == "text"
    assert await render(prompt) == "Summary:brief"


async def test_a_sync_function_gets_one_dict_of_the_given_arguments() -> None:
    prompt = resolve_prompt(
        spec(arguments=FILE_AND_FOCUS, type="function", content=f"{FUNCTIONS}:review")
    )
    assert await render(prompt, {"file": "a.py"}) == "review(file=a.py)"
    assert await render(prompt, {"file": "a.py", "focus": ""}) == "review(file=a.py, focus=)"


async def test_a_sync_function_runs_off_the_event_loop_thread() -> None:
    prompt = resolve_prompt(spec(content=f"{FUNCTIONS}:where_am_i"))
    assert await render(prompt) == "worker"


async def test_an_async_function_is_awaited() -> None:
    prompt = resolve_prompt(
        spec(arguments=[{"name": "topic", "required": True}], content=f"{FUNCTIONS}:summarize")
    )
    assert prompt.kind == "function"
    assert await render(prompt, {"topic": "retries"}) == "summary of retries"


async def test_a_function_returning_a_non_string_is_an_error_naming_the_type() -> None:
    prompt = resolve_prompt(spec(content=f"{FUNCTIONS}:returns_a_number"))
    with pytest.raises(PromptFunctionError, match=r"'review'.*returned int instead of a string"):
        await render(prompt)


async def test_a_function_that_raises_is_an_error_naming_the_prompt_and_the_message() -> None:
    prompt = resolve_prompt(spec(content=f"{FUNCTIONS}:explodes"))
    with pytest.raises(PromptFunctionError) as raised:
        await render(prompt)
    message = str(raised.value)
    assert "'review'" in message
    assert "RuntimeError: disk on fire" in message
    assert isinstance(raised.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("no_such_module_xyz:run", ["cannot import module 'no_such_module_xyz'", "PYTHONPATH"]),
        (f"{FUNCTIONS}:missing", [f"module '{FUNCTIONS}' has no attribute 'missing'"]),
        (f"{FUNCTIONS}:NOT_CALLABLE", ["is a int, not a function"]),
    ],
)
def test_an_unusable_function_reference_is_a_config_error(
    content: str, expected: list[str]
) -> None:
    with pytest.raises(ConfigError) as raised:
        resolve_prompt(spec(type="function", content=content))
    message = str(raised.value)
    assert "custom prompt 'review'" in message
    assert repr(content) in message
    for fragment in expected:
        assert fragment in message


def test_auto_content_that_only_looks_like_a_reference_suggests_type_text() -> None:
    with pytest.raises(ConfigError, match="set type: text"):
        resolve_prompt(spec(content="Summary:brief"))


def test_type_function_without_a_reference_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="type is 'function' but content 'Review it'"):
        resolve_prompt(spec(type="function", content="Review it"))


async def test_missing_required_arguments_are_all_named_with_the_accepted_ones() -> None:
    prompt = resolve_prompt(
        spec(
            arguments=[*FILE_AND_FOCUS, {"name": "tone", "required": True}],
            content="{file} {focus} {tone}",
        )
    )
    with pytest.raises(InvalidInput) as raised:
        await render(prompt, {"focus": "bugs"})
    assert str(raised.value) == (
        "prompt 'review': missing required arguments 'file', 'tone'; "
        "it accepts 'file' (required), 'focus', 'tone' (required)"
    )


async def test_an_unknown_argument_is_refused_with_the_accepted_ones() -> None:
    prompt = resolve_prompt(spec(arguments=FILE_AND_FOCUS, content=f"{FUNCTIONS}:review"))
    with pytest.raises(InvalidInput) as raised:
        await render(prompt, {"file": "a.py", "path": "b.py"})
    assert str(raised.value) == (
        "prompt 'review': unknown argument 'path'; it accepts 'file' (required), 'focus'"
    )


async def test_a_prompt_without_arguments_says_so_when_given_one() -> None:
    prompt = resolve_prompt(spec(content="hello"))
    with pytest.raises(InvalidInput, match="it accepts no arguments"):
        await render(prompt, {"x": "1"})


def test_resolving_a_list_reports_every_broken_definition() -> None:
    specs = [
        spec(name="ok", content="fine"),
        spec(name="one", type="function", content="no_such_module_xyz:run"),
        spec(name="two", type="function", content="not a reference"),
    ]
    with pytest.raises(ConfigError) as raised:
        resolve_prompts(specs)
    message = str(raised.value)
    assert "custom prompt 'one'" in message
    assert "custom prompt 'two'" in message
    assert [p.name for p in resolve_prompts(specs[:1])] == ["ok"]


def test_an_unknown_prompt_name_lists_the_defined_ones() -> None:
    prompts = resolve_prompts([spec(name="a", content="x"), spec(name="b", content="y")])
    assert find_prompt(prompts, "b").name == "b"
    with pytest.raises(InvalidInput, match="unknown prompt 'c'; custom prompts: 'a', 'b'"):
        find_prompt(prompts, "c")
    with pytest.raises(InvalidInput, match="none are defined"):
        find_prompt([], "c")
