"""Fixtures for driving the real Ralph loop."""

from tests.ralph_plugin.ralph_host import ralph_workdir

__all__ = ["ralph_workdir"]
