"""The tables' building blocks: their Arrow schemas, typed filters rendered to ``where``
clauses, the reads' single hop, idempotency keys, usage counters, the tally of hot items,
the order of threads, vector columns to numpy."""
