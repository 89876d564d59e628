"""``ralph-context console``'s way in: a one-time login link (``config.console_link``) for
the console of the server this command started, or of the one already serving the store.

The link is not given to the browser on its command line (every local user can read a
process's arguments): the browser opens ``console-login.html``, a file of the owner's
beside the owner token (mode 0600), which sends it on to the link. With ``--no-browser``,
or no browser here, the link is printed on stderr, for the owner to open within
``VALID_SECONDS``.
"""

from __future__ import annotations

import html
import os
import sys
from pathlib import Path

from ralph_context.config import Settings, owner_token
from ralph_context.config.console_link import VALID_SECONDS, code_for
from ralph_context.errors import ConfigError

__all__ = ["REDIRECT_FILE", "login_link", "open_console"]

REDIRECT_FILE = "console-login.html"


def login_link(settings: Settings, console_url: str) -> str | None:
    """A one-time login link to the console at ``console_url`` (``.../console``) of a
    server of ``settings``' store; ``None`` when the store has no owner token (the console
    then asks for a token, or needs none)."""
    if not settings.server.owner_token:
        return None
    try:
        token = owner_token.read(settings.owner_token_path())
    except ConfigError:
        return None
    if token is None:
        return None
    return f"{console_url}/login?code={code_for(token)}"


def open_console(settings: Settings, console_url: str, *, browser: bool) -> None:
    """Open the console at ``console_url``, logged in once (see the module's docstring)."""
    link = login_link(settings, console_url)
    if link is None:
        target = console_url
    elif browser:
        target = _redirect_file(settings.owner_token_path().parent, link).as_uri()
    else:
        _say(f"log in to the console once at {link} (within {VALID_SECONDS:.0f} s)")
        return
    if not browser:
        _say(f"console {console_url}")
        return
    import webbrowser

    if not webbrowser.open(target):
        shown = link or console_url
        _say(f"no browser to open here; open {shown} (a login link works once)")


def _redirect_file(folder: Path, link: str) -> Path:
    """``folder``/``console-login.html`` (mode 0600), sending a browser on to ``link``."""
    page = folder / REDIRECT_FILE
    quoted = html.escape(link, quote=True)
    text = (
        '<!doctype html><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="0;url={quoted}">'
        f'<title>ralph-context console</title><a href="{quoted}">Open the console</a>\n'
    )
    page.unlink(missing_ok=True)  # a file of someone else's is not written through
    descriptor = os.open(page, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(text)
    return page


def _say(text: str) -> None:
    sys.stderr.write(f"ralph-context: {text}\n")
    sys.stderr.flush()
