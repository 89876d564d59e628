"""What the console prints of stored text: no invisible or terminal character, whatever a
page prints it through, and who recorded each item."""

from __future__ import annotations

from markupsafe import Markup

from ralph_context import origin
from ralph_context.models import ContextItem, ContextType
from ralph_context.server.console.render import Renderer
from tests.rendering.hostile import HOSTILE, invisible


def test_every_printed_value_loses_its_invisible_characters_and_stays_escaped() -> None:
    env = Renderer().env
    for text in HOSTILE:
        printed = env.from_string("{{ text }} {{ text|short(500) }}").render(text=text)
        assert invisible(printed) == []
        assert "<system-reminder>" not in printed and "<user-query>" not in printed
    marked = env.from_string("{{ value }}").render(value=Markup("<b>a\u200bb</b>"))
    assert marked == "<b>ab</b>"  # already-escaped HTML keeps its markup


def test_the_console_names_who_recorded_an_item() -> None:
    item = ContextItem(
        content="x",
        content_type=ContextType.SKILL,
        metadata={origin.RECORDED_BY: origin.mcp_client("cursor")},
    )
    assert Renderer().env.from_string("{{ item|who }}").render(item=item) == "mcp:cursor"
