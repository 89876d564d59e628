"""The engine: one facade, :class:`Engine`, over the actors.

``facade.py`` holds what adapters call. The facade owns its parts and delegates to them:
``wiring.py`` (the actors, their lifetime, the paths every part shares), ``items.py`` (items
stored and read back, the store as a whole) and ``loop.py`` (what a loop records and the
lifecycle scheduled after it); ``health.py`` is what ``health()`` says.
"""

from __future__ import annotations

from ralph_context.engine.facade import Engine, EngineHealth, ItemPage, NewItem

__all__ = ["Engine", "EngineHealth", "ItemPage", "NewItem"]
