"""The store's owner token as a mechanism: made once, owner-only, refused when others could
read or replace it, the token clients pick; the console's one-time login codes; and whose
is the socket a project's note points at."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from ralph_context.config import Settings
from ralph_context.config import owner_token as owner
from ralph_context.config.console_link import VALID_SECONDS, Codes, code_for, key_of
from ralph_context.errors import ConfigError
from ralph_context.server.agents.listener import listener_is_ours
from ralph_context.server.tokens import TokenBook
from tests.helpers import SettingsFactory


def test_the_owner_token_is_made_once_owner_only_and_then_read(tmp_path: Path) -> None:
    path = tmp_path / "store" / owner.OWNER_FILE
    made = owner.ensure(path)
    assert len(made) >= 40 and owner.ensure(path) == made == owner.read(path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert owner.read(tmp_path / "missing") is None


def test_servers_starting_at_once_agree_on_one_token(tmp_path: Path) -> None:
    path = tmp_path / "store" / owner.OWNER_FILE
    found: list[str] = []
    start = threading.Barrier(8)

    def make() -> None:
        start.wait(timeout=5)
        found.append(owner.ensure(path))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=5)
    assert len(found) == 8 and len(set(found)) == 1
    assert [p.name for p in path.parent.iterdir()] == [owner.OWNER_FILE]  # no temp left


def test_a_token_others_could_read_or_replace_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store" / owner.OWNER_FILE
    owner.ensure(path)
    path.chmod(0o640)
    with pytest.raises(ConfigError, match="can be read by other users"):
        owner.read(path)
    path.chmod(0o600)
    path.parent.chmod(0o777)
    with pytest.raises(ConfigError, match="can be written by other users"):
        owner.ensure(path)
    path.parent.chmod(0o700)
    path.write_text("short\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="holds no token"):
        owner.read(path)


def test_the_owner_token_lives_in_the_store_folder_and_grants_every_namespace(
    make_settings: SettingsFactory,
) -> None:
    settings = make_settings()
    store = settings.store_root()
    assert isinstance(store, Path)
    assert settings.owner_token_path() == store / owner.OWNER_FILE
    token = owner.ensure(settings.owner_token_path())
    book = TokenBook.load(None, environ={}, owner=token)
    grant = book.verify(token)
    assert grant is not None and grant.label == "owner" and grant.allows("any-namespace")
    assert book.owner_digest == key_of(token)
    assert TokenBook.load(None, environ={}).owner_digest is None


def test_a_client_sends_the_owner_token_to_loopback_only(
    make_settings: SettingsFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RALPH_CONTEXT_TOKEN", raising=False)
    settings = make_settings()
    assert owner.client_token(settings) is None  # no server made one yet, none configured
    token = owner.ensure(settings.owner_token_path())
    assert owner.client_token(settings) == token
    assert owner.client_token(settings, "http://127.0.0.1:8765/mcp") == token
    # Another machine gets the configured token (here from the environment), never this one.
    monkeypatch.setenv("RALPH_CONTEXT_TOKEN", "configured-token-0123456789")
    assert owner.client_token(settings, "http://10.1.2.3:8765/mcp") == "configured-token-0123456789"
    off = settings.with_overrides(server={"owner_token": False})
    assert owner.client_token(off) == "configured-token-0123456789"


def test_a_login_code_works_once_within_its_time_and_only_for_its_token() -> None:
    now = [1_800_000_000.0]
    token = "the-owner-token-0123456789abcdef"
    codes = Codes(key_of(token), clock=lambda: now[0])
    fresh = code_for(token, now=now[0])
    assert codes.take(fresh) and not codes.take(fresh)  # once
    assert not codes.take(code_for("another-token-0123456789abcdef", now=now[0]))
    stamp, nonce, signature = code_for(token, now=now[0]).split(".")
    assert not codes.take(f"{int(stamp) + 1}.{nonce}.{signature}")  # the time is signed
    assert not codes.take("") and not codes.take("1.2") and not codes.take("x.y.z")
    late = code_for(token, now=now[0])
    now[0] += VALID_SECONDS + 1
    assert not codes.take(late)
    assert not codes.take(code_for(token, now=now[0] + 60))  # from the future


def test_a_port_another_user_listens_on_is_not_ours() -> None:
    with socket.socket() as mine:
        mine.bind(("127.0.0.1", 0))
        mine.listen()
        port = mine.getsockname()[1]
        assert listener_is_ours(f"http://127.0.0.1:{port}")
    # Nothing listens now: the request would be refused, so nothing is sent anyway.
    assert listener_is_ours(f"http://127.0.0.1:{port}")
    assert listener_is_ours("http://127.0.0.1:notaport")
    # Another user's socket: tests/server/test_only_the_owner.py, as uid 65534.


def test_settings_keep_the_owner_token_by_default() -> None:
    assert Settings().server.owner_token is True
