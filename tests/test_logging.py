"""Logging set up before structlog is imported (a command's ``--log-level``, parsed before
anything logs) applies from the first line logged: structlog is imported then, not when the
settings or the CLI load (it costs a command ~0.2 s that ``stats`` beside a server and
``--version`` never spend)."""

from __future__ import annotations

import json
import subprocess
import sys


def _run(code: str) -> subprocess.CompletedProcess[str]:
    preamble = (
        "import sys\n"
        "from ralph_context._logging import configure_logging, ensure_logging, get_logger\n"
        "log = get_logger('ralph_context.test')\n"
    )
    return subprocess.run(
        [sys.executable, "-c", preamble + code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def test_a_level_set_before_structlog_is_imported_applies_to_the_first_line() -> None:
    done = _run(
        "configure_logging('info')\n"
        "assert 'structlog' not in sys.modules\n"
        "log.debug('not_shown')\n"
        "log.info('first_line', key='value')\n"
    )
    assert done.stdout == ""  # stdout belongs to the MCP stdio protocol
    assert "first_line" in done.stderr and "key=value" in done.stderr
    assert "not_shown" not in done.stderr


def test_json_lines_set_before_structlog_is_imported_are_json() -> None:
    done = _run("configure_logging('warning', json=True)\nlog.warning('as_json', n=1)\n")
    line = json.loads(done.stderr.strip().splitlines()[-1])
    assert (line["event"], line["level"], line["n"]) == ("as_json", "warning", 1)


def test_ensure_logging_keeps_what_was_set_before_structlog_was_imported() -> None:
    done = _run(
        "configure_logging('error')\n"
        "ensure_logging()\n"  # the engine's start: defaults only if nothing was configured
        "log.warning('below_error')\n"
        "log.error('at_error')\n"
    )
    assert "at_error" in done.stderr
    assert "below_error" not in done.stderr


def test_without_configuration_ensure_logging_routes_warnings_to_stderr() -> None:
    done = _run("ensure_logging()\nlog.warning('defaults')\nlog.info('not_at_warning')\n")
    assert done.stdout == ""
    assert "defaults" in done.stderr
    assert "not_at_warning" not in done.stderr
