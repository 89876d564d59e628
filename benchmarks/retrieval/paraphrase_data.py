"""The paraphrase retrieval set: six projects' stores, each asked in other words.

Each store is one software project an agent loop works on, written as a loop stores it
(tasks, file notes, errors with their fix, skills, tool output, iteration summaries and
decisions, with the iteration each was stored at). Each answerable query wants one item (a
few accept either of two) and shares no content word or crude stem with it
(:func:`~benchmarks.retrieval.paraphrase_types.shared_stems`); most share a word with some
other item of the store, a decoy whose words match and whose meaning does not. Absent
queries are plausible questions about the project that the store cannot answer: what a
search returns for them is noise.

The queries were written without looking at how any search ranks them; they measure
retrieval by meaning, and the engine's scoring is to be fitted to them by cross-validation
(folds by project), never tuned against them one by one.
"""

from __future__ import annotations

from benchmarks.retrieval.paraphrase_pipelines import DEFECT_CLASSIFIER, SALES_ETL
from benchmarks.retrieval.paraphrase_platform import FLEET_DASHBOARD, PLATFORM_INFRA
from benchmarks.retrieval.paraphrase_services import LOGSIFT, ORDERS_API
from benchmarks.retrieval.paraphrase_types import Item, Query, Store, shared_stems

__all__ = ["STORES", "Item", "Query", "Store", "shared_stems"]

STORES: tuple[Store, ...] = (
    ORDERS_API,
    LOGSIFT,
    SALES_ETL,
    FLEET_DASHBOARD,
    PLATFORM_INFRA,
    DEFECT_CLASSIFIER,
)
