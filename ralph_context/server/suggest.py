"""What a client that asked for a tool or resource that does not exist is told instead.

The SDK answers ``Unknown tool: x`` and nothing more; an agent (or a person at the MCP
Inspector) then has to list the tools to find that it meant ``store_context``. The answer
here names the closest names that exist, so the next call can be the right one; a tool of a
pack this server does not serve is told which pack to name (``off_face``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping

__all__ = ["closest", "needs_model_server", "unknown_resource", "unknown_tool", "unserved_pack"]

_PLACEHOLDER = re.compile(r"\{[^}]*\}")


def closest(wanted: str, known: Iterable[str], *, most: int = 3) -> list[str]:
    """The names in ``known`` nearest to ``wanted``: near spellings first, then names that
    contain it or that it contains (``store`` -> ``store_context``...), best first."""
    names = sorted(set(known))
    near = difflib.get_close_matches(wanted, names, n=most, cutoff=0.6)
    folded = wanted.lower()
    inside = [n for n in names if n not in near and (folded in n.lower() or n.lower() in folded)]
    inside.sort(key=lambda n: -difflib.SequenceMatcher(None, folded, n.lower()).ratio())
    return (near + inside)[:most]


def unserved_pack(name: str, pack: str, *, needs_model: bool = False) -> str:
    """What a call to ``name``, a tool of ``pack``, is told by a server not serving it
    (``needs_model``: the tool also wants a language model server, which it has not)."""
    also = ", give it a language model server (inference.servers)," if needs_model else ""
    return (
        f"tool {name!r} is in the {pack} pack, which this server does not serve: add "
        f"{pack} to learning.mcp_context.packs in ralph.yaml (packs: [{pack}]){also} and "
        "restart the server"
    )


def needs_model_server(name: str, how: str) -> str:
    """What a call to ``name``, a tool that asks a language model, is told by a server with
    none; ``how`` says how to configure one."""
    return f"tool {name!r} asks a language model, and this server has none: {how}"


def unknown_tool(
    name: str,
    known: Iterable[str],
    *,
    hidden: Iterable[str] = (),
    off_face: Mapping[str, str] | None = None,
) -> str:
    """The message for a call to ``name``, which is not among ``known``; ``hidden`` are the
    write tools a read-only server does not offer, ``off_face`` the tools it would offer
    configured otherwise, each with what to configure."""
    if name in set(hidden):
        return (
            f"tool {name!r} changes the store, and this server is read-only "
            "(serve --read-only): it offers only the tools that read"
        )
    if off_face is not None and name in off_face:
        return off_face[name]
    names = sorted(set(known))
    nearest = closest(name, names)
    if nearest:
        return f"unknown tool {name!r}; did you mean {_either(nearest)}?"
    return f"unknown tool {name!r}; the tools are: {', '.join(names)}"


def unknown_resource(uri: str, uris: Iterable[str], templates: Iterable[str]) -> str:
    """The message for a read of ``uri``, which neither a resource nor a template serves.

    A template is compared by what comes before its first placeholder, with ``uri`` cut to
    the same number of path segments (``context://item/7`` is near ``context://items/{id}``).
    """
    shown: dict[str, str] = {u: u for u in uris}
    for template in templates:
        stem = _PLACEHOLDER.split(template, maxsplit=1)[0]
        shown.setdefault(stem, template)
    candidates = list(shown)
    nearest = closest(uri, candidates)
    for stem in candidates:
        if stem in nearest or stem == shown[stem]:
            continue
        cut = "/".join(uri.split("/")[: stem.count("/")]) + "/"
        if difflib.SequenceMatcher(None, cut, stem).ratio() >= 0.8:
            nearest.insert(0, stem)
    suggestions = list(dict.fromkeys(shown[s] for s in nearest))[:3]
    if suggestions:
        return f"unknown resource {uri!r}; did you mean {_either(suggestions)}?"
    everything = ", ".join(sorted(shown.values()))
    return f"unknown resource {uri!r}; the resources are: {everything}"


def _either(names: list[str]) -> str:
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
