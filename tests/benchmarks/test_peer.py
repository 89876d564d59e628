"""``bench peer``: the parts that need no peer (question picking, the fastembed cache, the
vector check's refusal, reading the peer's answers, the pid wrapper, the report), and the
whole command on a tiny LoCoMo when the peer's venv is already there."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mcp import StdioServerParameters
from mcp.types import CallToolResult, TextContent
from numpy.typing import NDArray

from benchmarks.peer.machine import CpuSnapshot, Machine, tree_cpu_seconds
from benchmarks.peer.model_files import HF_REPO, ModelFilesError, check_vectors, lay_out_cache
from benchmarks.peer.report import markdown
from benchmarks.peer.run import Side, pick_questions, side_results
from benchmarks.peer.servers import peer_dia_ids, with_pid_file
from benchmarks.peer.venv import VERSION, default_venv, installed_version
from benchmarks.retrieval.locomo import Conversation, Question, Turn
from benchmarks.retrieval.recall import Recall
from benchmarks.serving import cpu_seconds
from ralph_context.embeddings.local import LocalEmbedder
from tests.cli.test_cli import cli

# Two conversations of two sessions, three turns each, and their questions (one of
# category 5, which is not asked): (sample_id, speakers, sessions, [(question, evidence,
# category)]).
_TINY = [
    (
        "tiny-a",
        ("Ada", "Ben"),
        [
            ["I started learning the cello last week.", "Which teacher?", "Mrs. Okafor."],
            ["My cat Pixel knocked over the cello stand.", "Is it fine?", "Only the bow."],
        ],
        [
            ("What instrument is Ada learning?", "D1:1", 4),
            ("Who teaches Ada?", "D1:3", 4),
            ("What did Ada's cat knock over?", "D2:1", 1),
            ("What about Ada's violin?", "D1:1", 5),
        ],
    ),
    (
        "tiny-b",
        ("Cleo", "Dev"),
        [
            ["We hiked up Mount Tamsin on Saturday.", "How long?", "Four hours, in the rain."],
            ["I bought new boots after the hike.", "What brand?", "Trailwise, waterproof."],
        ],
        [
            ("Which mountain did Cleo hike?", "D1:1", 4),
            ("What brand of boots did Cleo buy?", "D2:3", 3),
        ],
    ),
]


def tiny_locomo(path: Path) -> Path:
    """:data:`_TINY` in LoCoMo's format, written to ``path``."""
    records = []
    for sample_id, speakers, sessions, questions in _TINY:
        record: dict[str, Any] = {"speaker_a": speakers[0], "speaker_b": speakers[1]}
        for number, texts in enumerate(sessions, 1):
            record[f"session_{number}_date_time"] = f"10:00 am on {number} May, 2023"
            record[f"session_{number}"] = [
                {"speaker": speakers[i % 2], "dia_id": f"D{number}:{i + 1}", "text": text}
                for i, text in enumerate(texts)
            ]
        qa = [{"question": q, "evidence": [e], "category": c} for q, e, c in questions]
        records.append({"sample_id": sample_id, "conversation": record, "qa": qa})
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def _conversation(sample_id: str, categories: list[int]) -> Conversation:
    questions = tuple(Question(f"{sample_id} q{n}", ("D1:1",), c) for n, c in enumerate(categories))
    return Conversation(sample_id, (Turn("D1:1", 1, "A: hi"),), questions)


def test_questions_skip_category_5_and_a_limit_takes_them_in_turn() -> None:
    conversations = [
        _conversation("a", [4, 5, 1, 2, 3]),
        _conversation("b", [5, 4]),
        _conversation("c", [5]),
    ]
    every = pick_questions(conversations, None)
    assert [(c.sample_id, [q.category for q in qs]) for c, qs in every] == [
        ("a", [4, 1, 2, 3]),
        ("b", [4]),
    ]
    three = pick_questions(conversations, 3)
    assert [(c.sample_id, len(qs)) for c, qs in three] == [("a", 2), ("b", 1)]
    assert [(c.sample_id, len(qs)) for c, qs in pick_questions(conversations, 1)] == [("a", 1)]


def _model_dir(path: Path) -> Path:
    path.mkdir()
    for name in ("model_int8.onnx", "config.json", "tokenizer.json", "tokenizer_config.json"):
        (path / name).write_text(name, encoding="utf-8")
    (path / "special_tokens_map.json").write_text("{}", encoding="utf-8")
    manifest = {
        "model_id": "m",
        "model_file": "model_int8.onnx",
        "sha256": {"model_int8.onnx": "ab" * 32},
    }
    (path / "ralph_context_model.json").write_text(json.dumps(manifest), encoding="utf-8")
    return path


def test_the_fastembed_cache_is_the_hub_layout_linking_our_files(tmp_path: Path) -> None:
    model = _model_dir(tmp_path / "model")
    cache = tmp_path / "cache"
    lay_out_cache(model, cache)
    lay_out_cache(model, cache)  # again: the links are replaced, not refused
    repo = cache / ("models--" + HF_REPO.replace("/", "--"))
    revision = (repo / "refs" / "main").read_text(encoding="utf-8")
    assert revision == "ab" * 20
    snapshot = repo / "snapshots" / revision
    # The peer's model file name, our int8 file behind it.
    assert (snapshot / "model.onnx").resolve() == (model / "model_int8.onnx").resolve()
    assert sorted(p.name for p in snapshot.iterdir()) == [
        "config.json",
        "model.onnx",
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]


def test_no_installed_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelFilesError, match="ralph-context model install"):
        lay_out_cache(tmp_path, tmp_path / "cache")


class _TableModel:
    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def embed(self, documents: list[str], batch_size: int) -> Iterator[NDArray[np.float32]]:
        return (np.asarray(self.table[text], dtype=np.float32) for text in documents)


_PEER_FACTORY = """
import json, os
class _Provider:
    def __init__(self):
        self.table = json.loads(os.environ["FAKE_PEER_VECTORS"])
    async def embed_documents(self, texts):
        return [self.table[t] for t in texts]
    async def embed_query(self, text):
        return self.table[text]
def create_embedding_provider(settings):
    return _Provider()
"""


def _fake_peer(root: Path) -> Path:
    """A stand-in for the peer's package: a provider answering from FAKE_PEER_VECTORS."""
    package = root / "mcp_server_qdrant"
    (package / "embeddings").mkdir(parents=True)
    for init in (package / "__init__.py", package / "embeddings" / "__init__.py"):
        init.write_text("", encoding="utf-8")
    (package / "settings.py").write_text("class EmbeddingProviderSettings: pass\n")
    (package / "embeddings" / "factory.py").write_text(_PEER_FACTORY, encoding="utf-8")
    return root


def _check(tmp_path: Path, ours: dict[str, list[float]], peer: dict[str, list[float]]) -> float:
    env = {"PYTHONPATH": str(_fake_peer(tmp_path)), "FAKE_PEER_VECTORS": json.dumps(peer)}
    embedder = LocalEmbedder(_TableModel(ours), "fake", 2)
    return check_vectors(Path(sys.executable), env, embedder, list(ours)).max_abs_diff


def test_the_same_vectors_both_ways_pass_and_different_ones_are_refused(tmp_path: Path) -> None:
    ours = {"one": [0.6, 0.8], "two": [1.0, 0.0]}
    assert _check(tmp_path / "same", ours, ours) == 0.0
    other = {"one": [0.6, 0.8], "two": [0.999, 0.0447]}
    with pytest.raises(ModelFilesError, match="not using our model files"):
        _check(tmp_path / "other", ours, other)


def _answer(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)])


def test_the_peers_answer_gives_its_dia_ids_in_order() -> None:
    entry = "<entry><content>{}</content><metadata>{}</metadata></entry>"
    listed = [
        "Results for the query 'x'",
        entry.format("b", json.dumps({"dia_id": "D2:1"})),
        entry.format("a", ""),
        entry.format("c", json.dumps({"dia_id": "D1:4", "session": 1})),
    ]
    assert peer_dia_ids(_answer(json.dumps(listed))) == ["D2:1", "D1:4"]
    assert peer_dia_ids(_answer(listed[1])) == ["D2:1"]
    assert peer_dia_ids(_answer("null")) == []
    assert peer_dia_ids(CallToolResult(content=[])) == []


def test_the_pid_file_names_the_server_process_itself(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    server = StdioServerParameters(
        command=sys.executable, args=["-c", "import os; print(os.getpid())"]
    )
    wrapped = with_pid_file(server, pid_file)
    done = subprocess.run(
        [wrapped.command, *wrapped.args], capture_output=True, text=True, check=True
    )
    assert int(done.stdout) == int(pid_file.read_text(encoding="utf-8"))


def _side(recalls: Iterable[tuple[int, float]], latencies: list[float], cpu: float) -> Side:
    side = Side(
        recalls=[Recall(c, 10, v) for c, v in recalls],
        latencies_ms=latencies,
        first=[n % 2 == 0 for n in range(len(latencies))],
        answer_bytes=[1500] * len(latencies),
        engine_ms=[5.0] * len(latencies),
    )
    side.cpu_seconds, side.ingest_seconds, side.ingest_calls, side.items = cpu, 2.0, 4, 10
    return side


def test_a_sides_row_has_recall_by_category_latency_and_cpu_per_call() -> None:
    row = side_results(_side([(4, 1.0), (1, 0.5), (4, 0.0)], [10.0, 20.0, 30.0], 0.03), 2_500_000)
    assert row["recall_at_10"] == 0.5
    assert row["recall"]["10"] == {"overall": 0.5, "1": 0.5, "4": 0.5}
    assert row["latency_ms"]["p50"] == 20.0 and row["latency_ms"]["mean"] == 20.0
    assert (row["latency_ms"]["p50_asked_first"], row["latency_ms"]["p50_asked_second"]) == (
        20.0,
        20.0,
    )
    assert row["cpu_ms_per_call"] == 10.0
    assert row["ingest"] == {"items": 10, "calls": 4, "seconds": 2.0, "items_per_second": 5.0}
    assert row["disk_mb"] == 2.5
    assert (row["answer_kb_p50"], row["engine_ms_p50"]) == (1.5, 5.0)
    results = {
        "questions": 3,
        "categories": [1, 2, 3, 4],
        "conversations": ["a"],
        "model": {"id": "m", "vectors_checked": 16, "max_abs_diff": 0.0},
        "servers": {
            "ours": {"name": "us"} | row,
            "peer": {"name": "them"} | row | {"engine_ms_p50": None},
        },
        "machine": {
            "cpus": 2,
            "load_before": [1, 1, 1],
            "load_after": [2, 1, 1],
            "during_questions": {
                "load_1m": {"min": 1, "median": 1.5, "max": 2},
                "seconds": 9.0,
                "busy_cores": 1.5,
                "other_processes_cores": 0.25,
                "steal_cores": 0.0,
            },
        },
        "notes": "n",
    }
    table = markdown(results)
    assert "| | us | them |" in table
    assert "| recall@10 (LoCoMo evidence) | 0.500 | 0.500 |" in table
    assert "| server CPU per call, ms | 10.0 | 10.0 |" in table
    assert "|   p50 asked first / second, ms | 20.0 / 20.0 | 20.0 / 20.0 |" in table
    assert "|   engine's own time p50, ms | 5.0 | - |" in table
    assert "1.5 cores busy on average, 0.25 of them other processes'" in table


# Burns 0.2 s of CPU in a child it waits for, then waits for stdin: the parent's own time
# is tiny, its tree's is not.
_PARENT = """
import subprocess, sys
burn = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.2: pass"
subprocess.run([sys.executable, "-c", burn], check=True)
print("ready", flush=True)
sys.stdin.read()
"""


def test_a_servers_cpu_counts_the_children_it_started() -> None:
    with subprocess.Popen(
        [sys.executable, "-c", _PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as parent:
        assert parent.stdout is not None and parent.stdin is not None
        assert parent.stdout.readline() == "ready\n"
        assert tree_cpu_seconds(parent.pid) >= 0.2 > cpu_seconds(parent.pid)
        parent.stdin.close()
    with pytest.raises(OSError):
        tree_cpu_seconds(parent.pid)


def test_other_processes_cpu_is_the_machines_less_the_servers_and_the_client() -> None:
    earlier = CpuSnapshot(1.0, {"ours": 1.0, "peer": 2.0}, 0.5, Machine(10.0, 0.0))
    later = CpuSnapshot(3.0, {"ours": 1.5, "peer": 2.25}, 0.75, Machine(12.0, 0.5))
    phase = later - earlier
    assert (phase.at, phase.servers, phase.client) == (2.0, {"ours": 0.5, "peer": 0.25}, 0.25)
    assert phase.others == 1.0 and phase.machine.steal == 0.5


@pytest.mark.model
@pytest.mark.skipif(
    installed_version(default_venv()) != VERSION,
    reason=f"no peer venv at {default_venv()}: `ralph-context bench peer` makes it",
)
def test_bench_peer_asks_both_servers_and_writes_its_files(tmp_path: Path) -> None:
    data = tiny_locomo(tmp_path / "tiny.json")
    done = cli(
        "bench", "peer", "--data", str(data), "--questions", "3", "--out", str(tmp_path / "out")
    )
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert (results["questions"], results["conversations"]) == (3, ["tiny-a", "tiny-b"])
    assert results["model"]["max_abs_diff"] <= 1e-5
    for side in results["servers"].values():
        assert 0.0 <= side["recall_at_10"] <= 1.0
        assert 0 < side["latency_ms"]["p50"] <= side["latency_ms"]["p99"]
        assert side["cpu_ms_per_call"] > 0 and side["disk_mb"] > 0
        assert side["ingest"]["items"] == 12
    assert "mcp-server-qdrant 0.8.1" in done.stderr
    assert (tmp_path / "out" / "results.md").is_file()
