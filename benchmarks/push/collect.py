"""Each kind of data's prompts asked as the prompt hook asks them, against stores filled as
their own benchmarks fill them.

- ``everyday`` and ``paraphrase``: the six projects' loop stores of the paraphrase set
  (``benchmarks/retrieval/paraphrase_data.py``), filled iteration by iteration; each store is
  asked its paraphrase queries (30 with no answer in it) and the everyday prompts written for
  it (``everyday.yaml``). A project is a fold group for both.
- ``locomo``: one store per conversation, session by session (``retrieval/run.py``'s
  ``ingest``); category 5 (adversarial: the answer is "not mentioned") is the no-answer kind,
  questions of the other categories with no evidence listed cannot be graded and are left
  out. A conversation is a fold group.
- ``longmemeval``: one store per question, its haystack session by session
  (``longmemeval_store.fill_store``); the ``_abs`` questions are the no-answer kind, an
  answer is a ``has_answer`` turn. A question is a fold group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.push.asked import Asked, Served, served
from benchmarks.push.everyday import Prompt
from benchmarks.retrieval.locomo import CATEGORIES, load_conversations
from benchmarks.retrieval.longmemeval import load_questions
from benchmarks.retrieval.longmemeval_store import fill_store, open_engine
from benchmarks.retrieval.paraphrase_data import STORES, Store
from benchmarks.retrieval.paraphrase_run import fill
from benchmarks.retrieval.run import ingest
from benchmarks.settings import store_settings
from ralph_context import ContextItem, Engine
from ralph_context.config.agents import AgentsSettings
from ralph_context.embeddings.local import LocalEmbedder

__all__ = ["ADVERSARIAL", "ask", "collect_locomo", "collect_longmemeval", "collect_projects"]

ADVERSARIAL = 5  # LoCoMo's category whose answer is not in the conversation
Tick = Callable[[], None]
Items = tuple[Served, ...]


async def ask(engine: Engine, prompt: str, answers: Callable[[ContextItem], bool]) -> Items:
    """``prompt`` asked as the prompt hook asks it (``server/agents/events.py``): the
    default search within ``agents.prompt_budget_tokens``."""
    found = await engine.search(prompt, max_tokens=AgentsSettings().prompt_budget_tokens)
    return served(found.items, answers)


async def collect_projects(
    model: LocalEmbedder,
    workdir: Path,
    everyday: Sequence[Prompt],
    tick: Tick,
    *,
    stores: Sequence[Store] = STORES,
    paraphrases: bool = True,
) -> list[Asked]:
    """The paraphrase queries and the everyday prompts of each project's store."""
    asked: list[Asked] = []
    for store in stores:
        settings = store_settings(workdir / store.project, skillbook={"enabled": False})
        async with open_engine(settings, model) as engine:
            ids = {key: item_id for item_id, key in (await fill(engine, store)).items()}
            queries = [
                ("paraphrase", "absent" if q.absent else "answerable", q.text, q.targets)
                for q in (store.queries if paraphrases else ())
            ]
            queries += [
                ("everyday", p.kind, p.text, p.targets)
                for p in everyday
                if p.project == store.project
            ]
            for kind, category, text, targets in queries:
                items = await ask(engine, text, _one_of({ids[t] for t in targets}))
                asked.append(Asked(kind, store.project, category, bool(targets), text, items))
                tick()
    return asked


async def collect_locomo(
    data: Path,
    model: LocalEmbedder,
    workdir: Path,
    tick: Tick,
    *,
    conversations: int | None = None,
    questions: int | None = None,
) -> list[Asked]:
    """LoCoMo's questions, category 5 as the no-answer kind."""
    asked: list[Asked] = []
    for index, conversation in enumerate(load_conversations(data)[:conversations]):
        settings = store_settings(workdir / f"c{index}", skillbook={"enabled": False})
        async with open_engine(settings, model) as engine:
            await ingest(engine, conversation)
        async with open_engine(settings, model) as engine:  # reopened, as a loop resuming
            for question in conversation.questions[:questions]:
                adversarial = question.category == ADVERSARIAL
                if not adversarial and not question.evidence:
                    continue  # nothing to grade it by
                evidence = set() if adversarial else set(question.evidence)
                items = await ask(engine, question.text, _turn_of(evidence))
                category = CATEGORIES[question.category]
                asked.append(
                    Asked(
                        "locomo",
                        conversation.sample_id,
                        category,
                        not adversarial,
                        question.text,
                        items,
                    )
                )
                tick()
    return asked


async def collect_longmemeval(
    data: Path,
    model: LocalEmbedder,
    workdir: Path,
    tick: Tick,
    *,
    questions: int | None = None,
) -> list[Asked]:
    """LongMemEval's questions, each in its own haystack; ``_abs`` as the no-answer kind."""
    asked: list[Asked] = []
    for index, question in enumerate(load_questions(data)[:questions]):
        filled = await fill_store(question, workdir / f"q{index}", model)
        wanted = {i for i, turn in filled.turns.items() if turn.has_answer}
        if question.abstention:
            wanted = set()  # its has_answer turns hold what is near, not the answer
        async with open_engine(filled.settings, model) as engine:
            items = await ask(engine, question.text, _one_of(wanted))
        category = "abstention" if question.abstention else question.question_type
        asked.append(
            Asked(
                "longmemeval",
                question.question_id,
                category,
                not question.abstention,
                question.text,
                items,
            )
        )
        tick()
    return asked


def _one_of(ids: set[str]) -> Callable[[ContextItem], bool]:
    """An item answers when it is one of ``ids``."""
    return lambda item: item.id in ids


def _turn_of(dia_ids: set[str]) -> Callable[[ContextItem], bool]:
    """A LoCoMo item answers when it is an evidence turn, by its ``dia_id`` (as the
    retrieval bench grades)."""
    return lambda item: str(item.metadata.get("dia_id")) in dia_ids
