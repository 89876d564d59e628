"""Retrieval: the ladder (``retriever.py``: semantic → text → none), the candidate pool
(``candidate_pool.py``), the relevance formula and the token budget (``scoring.py``, pure),
the scoring actor that runs it (``scoring_actor.py``) and the block retrieved items are
injected as (``injection.py``).

Kept empty: the Ralph hook imports ``injection`` without the engine.
"""
