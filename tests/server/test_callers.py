"""Who asks decides what the answers about the store show (see ``server/callers``)."""

from __future__ import annotations

from pathlib import Path

from ralph_context.config import Settings
from ralph_context.server.callers import LOCAL, Caller, current
from ralph_context.server.schemas import ActorStatus, HealthReport


def test_a_remote_health_report_names_no_path_of_the_server(tmp_path: Path) -> None:
    settings = Settings.load(None).with_overrides(storage={"path": str(tmp_path / "store")})
    root = str(settings.store_root())
    report = HealthReport(
        status="degraded",
        tier="text",
        actors={
            "storage": ActorStatus(
                state="failed", restarts=2, last_error=f"cannot open the store at {root}/x"
            ),
            "embedding": ActorStatus(state="running", restarts=0, last_error=None),
        },
        not_configured=[],
        store=root,
        size_bytes=None,
        max_size_mb=500.0,
        model_id=None,
        current_iteration=0,
        version="0",
        write_error=f"store is full: No space left on device at {root}",
    )

    remote = report.without_paths(settings)

    assert remote.store == "local store, namespace default"
    assert remote.actors["storage"].last_error == "cannot open the store at <store>/x"
    assert remote.write_error == "store is full: No space left on device at <store>"
    assert str(tmp_path) not in remote.model_dump_json()
    assert report.store == root  # a local client keeps it


def test_outside_a_request_the_caller_is_local_and_sees_every_namespace() -> None:
    assert current() is LOCAL and LOCAL.sees("anything")
    scoped = Caller(remote=True, namespaces=frozenset({"alpha"}))
    assert scoped.sees("alpha") and not scoped.sees("beta")
