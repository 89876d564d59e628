"""The storage actor (``actor``): the store's only writer and the gate to its readers, in
the parts it delegates to: its requests, reads, group commits, writes beside maintenance,
forwarding to a shared store's committer, reopening and read-only spells."""
