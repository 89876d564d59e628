"""The ``inference`` section: defaults, validation, and servers registered from the env."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from ralph_context.config import InferenceServerSettings, InferenceSettings, Settings
from ralph_context.errors import ConfigError
from ralph_context.inference import adapter_for


def test_defaults_follow_the_specs_timeouts_and_register_nothing_without_env() -> None:
    settings = InferenceSettings()
    timeouts = settings.timeouts
    assert (timeouts.list_models, timeouts.complete, timeouts.react_step) == (30, 300, 300)
    assert (timeouts.judge, timeouts.generate_variants, timeouts.embedding) == (60, 60, 10)
    assert settings.retries == 3
    assert settings.resolved_servers({}) == ()


def test_the_environment_registers_lm_studio_together_and_hugging_face_servers() -> None:
    env = {
        "LMSTUDIO_SERVERS": "http://gpu-box:1234, http://localhost:1234/v1,",
        "TOGETHER_API_KEY": "t",
        "HF_TOKEN": "h",
    }
    servers = InferenceSettings().resolved_servers(env)
    assert [(s.kind, s.base_url) for s in servers] == [
        ("lmstudio", "http://gpu-box:1234"),
        ("lmstudio", "http://localhost:1234/v1"),
        ("together", None),
        ("huggingface", None),
    ]
    adapters = [adapter_for(s.kind, s.base_url, s.api_key_env, environ=env) for s in servers]
    assert [a.models_url for a in adapters] == [
        "http://gpu-box:1234/v1/models",
        "http://localhost:1234/v1/models",
        "https://api.together.xyz/v1/models",
        "https://router.huggingface.co/v1/models",
    ]
    assert adapters[2].headers() == {"Authorization": "Bearer t"}
    assert adapters[0].headers() == {}


def test_configured_servers_come_first_and_are_not_registered_twice() -> None:
    settings = InferenceSettings(
        servers=(
            InferenceServerSettings(kind="lmstudio", base_url="http://gpu-box:1234/"),
            InferenceServerSettings(kind="together", max_concurrency=2),
        )
    )
    env = {"LMSTUDIO_SERVERS": "http://gpu-box:1234/v1", "TOGETHER_API_KEY": "t"}
    assert settings.resolved_servers(env) == settings.servers
    quiet = settings.model_copy(update={"register_from_env": False})
    assert quiet.resolved_servers({"HF_TOKEN": "h"}) == settings.servers


def test_a_malformed_lmstudio_servers_variable_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match="LMSTUDIO_SERVERS holds 'gpu-box:1234'"):
        InferenceSettings().resolved_servers({"LMSTUDIO_SERVERS": "gpu-box:1234"})


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1:11434", "http://127.0.0.1:11434"),
        ("0.0.0.0", "http://127.0.0.1:11434"),  # listen everywhere: reached locally
        ('"0.0.0.0"', "http://127.0.0.1:11434"),  # quotes dropped, as Ollama does
        (":8080", "http://127.0.0.1:8080"),
        ("gpu-box", "http://gpu-box:11434"),
        ("http://gpu-box", "http://gpu-box:80"),  # an explicit scheme: its default port
        ("HTTPS://ollama.example.com", "https://ollama.example.com:443"),
        ("http://gpu-box:9000/ollama/", "http://gpu-box:9000/ollama"),
        ("gpu-box:99999", "http://gpu-box:11434"),  # an invalid port: the default
        ("[::1]:11434", "http://[::1]:11434"),
        ("::1", "http://[::1]:11434"),
    ],
)
def test_ollama_host_registers_ollama_where_ollama_itself_would_listen(host: str, url: str) -> None:
    [server] = InferenceSettings().resolved_servers({"OLLAMA_HOST": host})
    assert (server.kind, server.base_url) == ("ollama", url)
    adapter = adapter_for(server.kind, server.base_url, server.api_key_env, environ={})
    assert adapter.models_url == f"{url}/v1/models"


def test_ollama_host_is_not_registered_over_a_configured_ollama_server() -> None:
    configured = InferenceServerSettings(kind="ollama", base_url="http://gpu-box:11434")
    settings = InferenceSettings(servers=(configured,))
    assert settings.resolved_servers({"OLLAMA_HOST": "127.0.0.1"}) == (configured,)


@pytest.mark.parametrize("host", ["gpu box:11434", "ftp://gpu-box", "unix:///run/ollama.sock"])
def test_an_unusable_ollama_host_is_skipped_with_a_warning_and_the_rest_still_work(
    host: str,
) -> None:
    configured = InferenceServerSettings(kind="lmstudio", base_url="http://gpu-box:1234")
    settings = InferenceSettings(servers=(configured,))
    with capture_logs() as logs:
        servers = settings.resolved_servers({"OLLAMA_HOST": host, "HF_TOKEN": "h"})
    assert [s.kind for s in servers] == ["lmstudio", "huggingface"]
    [warning] = [entry for entry in logs if entry["event"] == "ollama_host_ignored"]
    assert warning["value"] == host


def test_invalid_server_entries_are_reported_with_their_key() -> None:
    base = Settings.load(None)
    with pytest.raises(ConfigError, match="needs a base_url"):
        base.with_overrides(inference={"servers": [{"kind": "openai"}]})
    with pytest.raises(ConfigError, match=r"inference\.servers\.0\.kind"):
        base.with_overrides(inference={"servers": [{"kind": "bedrock"}]})
    with pytest.raises(ConfigError, match="http:// or https://"):
        base.with_overrides(inference={"servers": [{"kind": "ollama", "base_url": "localhost"}]})
    with pytest.raises(ConfigError, match="used twice"):
        base.with_overrides(
            inference={
                "servers": [{"kind": "ollama", "name": "x"}, {"kind": "lmstudio", "name": "x"}]
            }
        )


def test_servers_can_be_set_as_json_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "RALPH_CONTEXT_INFERENCE__SERVERS",
        '[{"kind": "openai", "base_url": "https://openrouter.ai/api/v1", "api_key_env": "OR_KEY"}]',
    )
    (server,) = Settings.load(None).inference.servers
    adapter = adapter_for(server.kind, server.base_url, server.api_key_env, environ={"OR_KEY": "k"})
    assert adapter.chat_url == "https://openrouter.ai/api/v1/chat/completions"
    assert adapter.name == "openai@openrouter.ai"
    assert adapter.sampling_fields(1.2) == {}


def test_together_lists_only_its_chat_models() -> None:
    payload = [
        {"id": "meta-llama/Llama-3.3-70B-Instruct-Turbo", "type": "chat"},
        {"id": "BAAI/bge-large-en-v1.5", "type": "embedding"},
        {"id": "black-forest-labs/FLUX.1-schnell", "type": "image"},
    ]
    adapter = adapter_for("together", environ={})
    assert adapter.parse_models(payload) == ("meta-llama/Llama-3.3-70B-Instruct-Turbo",)
