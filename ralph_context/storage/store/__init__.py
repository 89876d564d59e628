"""``LanceStore``'s parts, one concern each, over the open state they share (``core``): items
and iterations read and written, the lifecycle's state moves and summaries, forgets, upkeep,
rows rewritten in place. ``storage.lance_store`` makes them one class; what they build on is
in the folders beside this one."""
