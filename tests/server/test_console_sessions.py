"""The console's sessions and redirects, without a server: idle expiry, the bound on their
number, CSRF comparison, and redirects that never leave the console."""

from __future__ import annotations

from ralph_context.server.console.guard import local
from ralph_context.server.console.sessions import EVERY, Sessions


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_idle_session_expires_and_a_used_one_lives_on() -> None:
    clock = Clock()
    sessions = Sessions(idle_seconds=100, clock=clock)
    used, idle = sessions.new(frozenset({EVERY})), sessions.new(None)
    for _ in range(3):
        clock.now += 60
        assert sessions.get(used.id) is used
    assert sessions.get(idle.id) is None
    assert sessions.get(used.id) is used
    assert sessions.get("") is None and sessions.get(None) is None


def test_the_oldest_session_makes_room_for_a_new_one() -> None:
    sessions = Sessions(limit=2)
    first, second = sessions.new(None), sessions.new(None)
    sessions.get(first.id)  # used last: the other one is the oldest now
    third = sessions.new(None)
    assert sessions.get(second.id) is None
    assert sessions.get(first.id) is first and sessions.get(third.id) is third


def test_grants_csrf_and_flash() -> None:
    sessions = Sessions()
    scoped, anonymous = sessions.new(frozenset({"beta"})), sessions.new(None)
    assert scoped.allows("beta") and not scoped.allows("default")
    assert not anonymous.allows("beta")
    assert sessions.new(frozenset({EVERY})).allows("anything")
    assert scoped.csrf_matches(scoped.csrf)
    assert not scoped.csrf_matches(anonymous.csrf) and not scoped.csrf_matches(None)
    assert scoped.id != scoped.csrf and len(scoped.id) >= 43
    scoped.flash = "done"
    assert scoped.take_flash() == "done" and scoped.take_flash() is None


def test_a_redirect_target_outside_the_console_becomes_its_start() -> None:
    kept = ["/console/search?q=a", "/console/items/abc", "/console"]
    refused = [
        None,
        "",
        "https://evil.example/console",
        "//evil.example/console",
        "/console\\@evil.example",
        "/consolex\r\nSet-Cookie: x=1",
        "javascript:alert(1)",
        "/mcp",
    ]
    assert [local(target) for target in kept] == kept
    assert {local(target) for target in refused} == {"/console/"}
