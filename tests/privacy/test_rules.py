"""Each kind of secret is found in the surroundings a loop stores it in; each look-alike is
left byte for byte."""

from __future__ import annotations

import pytest

from ralph_context.config.redaction import RedactionSettings
from ralph_context.models import JsonValue
from ralph_context.privacy import MARK, Redactor
from tests.privacy.secrets import IN_CONTEXT, LOOK_ALIKES, SECRETS


@pytest.mark.parametrize(("text", "value"), IN_CONTEXT)
def test_a_secret_is_replaced_in_place_and_its_surroundings_kept(text: str, value: str) -> None:
    redacted = Redactor().text(text)
    assert value not in redacted.text
    assert MARK.search(redacted.text), redacted.text
    # What was around the value is still there: the memory keeps its meaning.
    before = text.split(value)[0]
    assert redacted.text.startswith(before[: max(0, len(before) - 40)])
    assert sum(redacted.found.values()) >= 1


@pytest.mark.parametrize(("kind", "value"), sorted(SECRETS.items()))
def test_each_provider_shape_is_named_by_its_kind(kind: str, value: str) -> None:
    redacted = Redactor().text(f"value: {value}")
    assert redacted.text == f"value: [REDACTED:{kind}]"
    assert redacted.found == {kind: 1}


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_a_look_alike_is_left_byte_for_byte(text: str) -> None:
    redacted = Redactor().text(text)
    assert redacted.text == text
    assert not redacted.found


def test_several_secrets_in_one_text_are_each_replaced() -> None:
    text = f"AWS {SECRETS['aws_access_key_id']}, then {SECRETS['github_token']} and PASSWORD=x7Yq"
    redacted = Redactor().text(text)
    assert redacted.text == (
        "AWS [REDACTED:aws_access_key_id], then [REDACTED:github_token] and "
        "PASSWORD=[REDACTED:password]"
    )


def test_a_cut_off_private_key_loses_its_whole_body() -> None:
    text = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x9Qk2Lm\nZp4Rt8Wv"
    assert Redactor().clean(text) == "-----BEGIN RSA PRIVATE KEY-----[REDACTED:private_key]"


def test_metadata_values_under_secret_keys_are_replaced_and_numbers_kept() -> None:
    value: JsonValue = {
        "password": "hunter2x",
        "max_tokens": 1200,
        "nested": [{"api_key": "abcd1234efgh"}],
        "note": f"pushed with {SECRETS['github_token']}",
        "count": 3,
    }
    assert Redactor().json(value) == {
        "password": "[REDACTED:password]",
        "max_tokens": 1200,
        "nested": [{"api_key": "[REDACTED:api_key]"}],
        "note": "pushed with [REDACTED:github_token]",
        "count": 3,
    }


def test_extra_patterns_add_kinds_and_allow_keeps_values() -> None:
    redactor = Redactor(
        RedactionSettings(
            extra_patterns={"ticket_secret": r"tks_[a-z0-9]{12}"},
            allow=(r"^AKIAQ3EGRT7KZP2XN4WB$",),
        )
    )
    text = f"tks_abcdef123456 and {SECRETS['aws_access_key_id']} and {SECRETS['npm_token']}"
    assert redactor.clean(text) == (
        f"[REDACTED:ticket_secret] and {SECRETS['aws_access_key_id']} and [REDACTED:npm_token]"
    )


def test_disabled_redaction_changes_nothing() -> None:
    text = f"PASSWORD=hunter22 {SECRETS['github_token']}"
    assert Redactor(RedactionSettings(enabled=False)).clean(text) == text


def test_counts_add_up_by_kind() -> None:
    redactor = Redactor()
    redactor.clean(f"{SECRETS['github_token']} {SECRETS['github_token']}")
    redactor.clean("PASSWORD=abc123xyz")
    assert redactor.counts == {"github_token": 2, "password": 1}


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"extra_patterns": {"Bad Kind": "x+"}}, "kind"),
        ({"extra_patterns": {"k": "("}}, "extra_patterns.k"),
        ({"extra_patterns": {"k": "x*"}}, "empty string"),
        ({"allow": ["[unclosed"]}, "allow[0]"),
    ],
)
def test_bad_settings_are_refused_naming_the_key(settings: dict[str, object], named: str) -> None:
    with pytest.raises(ValueError) as caught:
        RedactionSettings.model_validate(settings)
    assert named in str(caught.value)
