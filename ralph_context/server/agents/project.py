"""Which project a hook runs in, and where that project's shared server answers.

Standard library only: this runs in every hook process, before anything else is imported.

A project is its git repository, not a folder: the hook's ``cwd`` may be a subfolder, or a
worktree of the same repository (whose ``.git`` is a file pointing into the main
repository's ``.git/worktrees/``). All of them resolve to the main worktree's top level,
so they share one store and one server. Outside git the working folder is the project.

The project's agent files live in ``<project>/.agent/`` (beside the default store):

- ``agent-server.json``: the running server's endpoint and PID, written by the server
  once it listens and removed when it exits (a stale one is found by a refused
  connection);
- ``agent-server.starting``: taken by the hook that starts the server (it holds the
  server's PID), so a burst of hooks starts one (another start is tried once it is older
  than :data:`START_GRACE` seconds);
- ``hook-spool.jsonl``: payloads captured while no server answered, which the server
  stores when it starts (so the first failure of a session is not lost);
- ``hooks.log`` and ``agent-server.log``: one line per hook that failed, the server's
  stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from ralph_context.server.agents.listener import listener_is_ours

# Only for the type checker: a hook process imports this module (see ``post``).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ralph_context.config import Settings

__all__ = [
    "SERVER_FILE",
    "SPOOL_FILE",
    "STARTING_FILE",
    "ServerNote",
    "agent_folder",
    "bearer_token",
    "forget_server",
    "git_dir",
    "project_root",
    "read_server",
    "spool",
    "start_server",
    "take_spool",
    "token_files",
    "write_server",
]

FOLDER = ".agent"
SERVER_FILE = "agent-server.json"
STARTING_FILE = "agent-server.starting"
SPOOL_FILE = "hook-spool.jsonl"
SERVER_LOG = "agent-server.log"
TOKEN_ENV = "RALPH_CONTEXT_TOKEN"
# Set by Claude Code for its hooks: the project the session was started in.
PROJECT_ENV = "CLAUDE_PROJECT_DIR"
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
# Seconds a start is given before another hook may try again (model load and store open).
START_GRACE = 30.0
# The spool stops growing here: a server that never comes up must not fill the disk.
MAX_SPOOL_BYTES = 8 << 20


class ServerNote:
    """How a hook reaches the project's server: its base URL (``http://127.0.0.1:PORT``),
    the MCP path of its namespace, the store's owner token file (``config.owner_token``)
    and the configured token file to read a bearer token from. (A plain class:
    ``dataclasses`` costs a hook ~15 ms.)"""

    __slots__ = ("base_url", "mcp_path", "owner_token", "pid", "token_file")

    def __init__(
        self,
        base_url: str,
        mcp_path: str,
        pid: int,
        token_file: str | None = None,
        owner_token: str | None = None,
    ) -> None:
        self.base_url = base_url
        self.mcp_path = mcp_path
        self.pid = pid
        self.token_file = token_file
        self.owner_token = owner_token

    def as_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__slots__}


def project_root(cwd: Path, environ: Mapping[str, str] | None = None) -> Path:
    """The main worktree's top level of the git repository holding the session's project
    (``CLAUDE_PROJECT_DIR`` when the agent sets it: a ``cd`` in the session moves the
    payload's ``cwd``, not the project), else ``cwd``'s, else ``cwd``."""
    given = (os.environ if environ is None else environ).get(PROJECT_ENV)
    here = Path(given).resolve() if given and Path(given).is_dir() else cwd.resolve()
    found = git_dir(here)
    if found is None:
        return here
    top, gitdir = found
    if gitdir == top / ".git":
        return top
    # A linked worktree's git dir is ``<main>/.git/worktrees/<name>``, whose ``commondir``
    # names the main ``.git``; a submodule's points elsewhere and is its own project.
    try:
        common = gitdir / "commondir"
        if not common.is_file():
            return top
        main_git = (gitdir / common.read_text(encoding="utf-8").strip()).resolve()
        return main_git.parent if main_git.name == ".git" else top
    except (OSError, ValueError):
        return top


def git_dir(start: Path) -> tuple[Path, Path] | None:
    """The worktree holding ``start`` and its git dir: ``<top>/.git`` itself, or where a
    linked worktree's ``.git`` file points (``gitdir: ...``); ``None`` outside git."""
    here = start.resolve()
    for folder in (here, *here.parents):
        marker = folder / ".git"
        if marker.is_dir():
            return folder, marker
        if marker.is_file():
            try:
                line = marker.read_text(encoding="utf-8").strip()
            except (OSError, ValueError):
                return None
            gitdir = Path(line.removeprefix("gitdir:").strip())
            return folder, gitdir if gitdir.is_absolute() else (folder / gitdir).resolve()
    return None


def agent_folder(root: Path) -> Path:
    return root / FOLDER


def read_server(root: Path) -> ServerNote | None:
    """The server note of ``root``'s project, if one is there, readable and trustworthy:
    written by this user with mode 0600 (as :func:`write_server` writes it: a note that
    came with a cloned repository is not), naming a loopback address whose listener, if
    any, is this user's (a hook sends the prompt there, and a bearer token)."""
    path = agent_folder(root) / SERVER_FILE
    try:
        if not _owner_only(path):
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        note = ServerNote(
            base_url=str(data["base_url"]),
            mcp_path=str(data.get("mcp_path", "/mcp")),
            pid=int(data["pid"]),
            token_file=data.get("token_file"),
            owner_token=data.get("owner_token"),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    host = note.base_url.removeprefix("http://").rpartition(":")[0].strip("[]")
    return note if host in _LOOPBACK and listener_is_ours(note.base_url) else None


def _owner_only(path: Path) -> bool:
    """Whether ``path`` belongs to this user and no one else may read or write it."""
    info = path.stat()
    return info.st_uid == os.getuid() and not info.st_mode & 0o077


def write_server(root: Path, note: ServerNote) -> None:
    """Advertise ``note`` (atomically: a hook never reads half a note)."""
    folder = _private_folder(root)
    body = json.dumps(note.as_dict(), indent=2) + "\n"
    temporary = folder / f".{SERVER_FILE}.{os.getpid()}"
    temporary.write_text(body, encoding="utf-8")
    os.chmod(temporary, 0o600)
    os.replace(temporary, folder / SERVER_FILE)
    _release_start(root)


def forget_server(root: Path, pid: int) -> None:
    """Remove the note if it is still ``pid``'s (a newer server's stays)."""
    note = read_server(root)
    if note is not None and note.pid == pid:
        (agent_folder(root) / SERVER_FILE).unlink(missing_ok=True)
    _release_start(root)


def _release_start(root: Path) -> None:
    """Remove the start marker if this process is the server it names (a marker a later
    hook took for another start stays)."""
    marker = agent_folder(root) / STARTING_FILE
    try:
        if marker.read_text(encoding="utf-8").strip() == str(os.getpid()):
            marker.unlink(missing_ok=True)
    except (OSError, ValueError):
        return


def start_server(root: Path, script: list[str] | None = None) -> bool:
    """Start the project's server detached (its own session: it outlives this hook and
    the agent), unless another hook started one less than :data:`START_GRACE` s ago.
    Returns whether this call started it."""
    folder = _private_folder(root)
    starting = folder / STARTING_FILE
    try:
        if time.time() - starting.stat().st_mtime < START_GRACE:
            return False
        starting.unlink(missing_ok=True)
    except FileNotFoundError:
        pass
    try:
        descriptor = os.open(starting, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    os.close(descriptor)
    command = script or [sys.executable, "-m", "ralph_context"]
    log = open(folder / SERVER_LOG, "ab")
    import subprocess  # here: a hook that finds its server never needs it

    try:
        child = subprocess.Popen(
            [*command, "serve", "--for-agents"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        log.close()
    starting.write_text(f"{child.pid}\n", encoding="utf-8")  # who is starting, for a person
    return True


def bearer_token(note: ServerNote, environ: Mapping[str, str] | None = None) -> str | None:
    """A bearer token for the server: the store's owner token the note names, else
    ``RALPH_CONTEXT_TOKEN``, else the first token of the file the server reads that grants
    the note's namespace (or every one). Each file must be this user's, owner-only, as the
    server requires."""
    owner = _first_token(note.owner_token, None)
    if owner:
        return owner
    env = os.environ if environ is None else environ
    if env.get(TOKEN_ENV):
        return env[TOKEN_ENV]
    path = note.mcp_path.strip("/").split("/")
    namespace = path[1] if len(path) == 3 and path[0] == "ns" else "default"
    return _first_token(note.token_file, namespace)


def _first_token(file: str | None, namespace: str | None) -> str | None:
    """The first token of ``file`` that grants ``namespace`` (any, for ``None``)."""
    if not file:
        return None
    try:
        if not _owner_only(Path(file)):
            return None
        for line in Path(file).read_text(encoding="utf-8").splitlines():
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if namespace is None or len(fields) == 1 or namespace in fields[1].split(","):
                return fields[0]
    except OSError:
        return None
    return None


def token_files(settings: Settings) -> tuple[str | None, str | None]:
    """Where a client of ``settings``' server reads its token (``ServerNote``'s
    ``owner_token`` and ``token_file``): the store's owner token, when the server keeps
    one, and the configured token file, each when it is there."""
    owner = settings.owner_token_path()
    configured = settings.token_path()
    return (
        str(owner) if settings.server.owner_token and owner.is_file() else None,
        str(configured) if configured.is_file() else None,
    )


def spool(root: Path, client: str, payload: dict[str, Any]) -> bool:
    """Keep ``payload`` for the server to store when it starts, redacted, in an owner-only
    file; False when the spool is full."""
    folder = _private_folder(root)
    path = folder / SPOOL_FILE
    try:
        if path.stat().st_size > MAX_SPOOL_BYTES:
            return False
    except FileNotFoundError:
        pass
    # Redacted before it touches the disk (the built-in rules; a user's extra patterns are
    # the server's to apply when it stores the payload): no secret waits in the spool.
    from ralph_context.privacy.redactor import Redactor

    clean = Redactor().json(payload)
    # When it was captured: a forget after it and before the take drops it (forget is final).
    at = datetime.now(UTC).isoformat()
    line = json.dumps({"client": client, "at": at, "payload": clean}, ensure_ascii=False) + "\n"
    descriptor = os.open(path, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600)
    with os.fdopen(descriptor, "a", encoding="utf-8") as out:
        out.write(line)
    return True


def take_spool(root: Path) -> list[tuple[str, dict[str, Any], datetime | None]]:
    """The spooled payloads with their clients and when each was spooled (``None``: by an
    earlier version), oldest first; the spool is emptied (renamed away first, so a hook
    appending meanwhile starts a new one)."""
    path = agent_folder(root) / SPOOL_FILE
    taken = path.with_name(f".{SPOOL_FILE}.{os.getpid()}")
    try:
        os.replace(path, taken)
    except FileNotFoundError:
        return []
    found: list[tuple[str, dict[str, Any], datetime | None]] = []
    try:
        for line in taken.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
                if isinstance(entry, dict) and isinstance(entry.get("payload"), dict):
                    at = entry.get("at")
                    when = datetime.fromisoformat(at) if isinstance(at, str) else None
                    found.append((str(entry.get("client", "")), entry["payload"], when))
            except ValueError:
                continue
    finally:
        taken.unlink(missing_ok=True)
    return found


def _private_folder(root: Path) -> Path:
    folder = agent_folder(root)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder
