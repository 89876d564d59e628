"""fp32 or weight-only int8 for the quality model: the measurement behind the choice.

Dynamic int8 (activations quantized per batch) makes a text's vector depend on the batch
beside it (issue 61: cosine 0.968-0.995 alone against in a batch of 4), so it is out. What
stays is int8 weights with float activations: each MatMul's weight stored as int8 with one
scale per output column, dequantized by a ``DequantizeLinear`` node. This script rewrites
the installed fp32 graph that way and compares the two on the same texts, interleaved:
size, query time, batch time, the cosine to fp32 and batch independence.

    python -m benchmarks.model.int8 [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ralph_context.config import EmbeddingsSettings

__all__ = ["weight_only_int8"]


def weight_only_int8(source: Path, target: Path) -> None:
    """Write ``source``'s graph with every 2-D MatMul weight as int8 + per-column scale."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    weights = {init.name: init for init in graph.initializer}
    matmul_weights = {
        node.input[1]
        for node in graph.node
        if node.op_type == "MatMul" and node.input[1] in weights
    }
    kept = [init for init in graph.initializer if init.name not in matmul_weights]
    nodes = []
    for name in sorted(matmul_weights):
        array = numpy_helper.to_array(weights[name]).astype(np.float32)
        scale = np.maximum(np.abs(array).max(axis=0), 1e-12) / 127.0
        quantized = np.clip(np.round(array / scale), -127, 127).astype(np.int8)
        kept += [
            numpy_helper.from_array(quantized, f"{name}.q"),
            numpy_helper.from_array(scale.astype(np.float32), f"{name}.scale"),
        ]
        nodes.append(
            helper.make_node("DequantizeLinear", [f"{name}.q", f"{name}.scale"], [name], axis=1)
        )
    del graph.initializer[:]
    graph.initializer.extend(kept)
    rest = list(graph.node)
    del graph.node[:]
    graph.node.extend([*nodes, *rest])
    onnx.save(model, str(target))


def _compare(fp32: Path, int8: Path, rounds: int) -> dict[str, Any]:
    import shutil

    from benchmarks.model.costs import _texts
    from ralph_context.embeddings.local import load_embedder

    queries, items = _texts()
    batch = [item for item in items if 120 <= len(item) <= 300][:64]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "int8"
        shutil.copytree(fp32, folder, ignore=shutil.ignore_patterns("model.onnx"))
        (folder / "model.onnx").symlink_to(int8)
        models = {
            "fp32": load_embedder(EmbeddingsSettings(model="all-mpnet-base-v2", model_path=fp32)),
            "int8": load_embedder(EmbeddingsSettings(model="all-mpnet-base-v2", model_path=folder)),
        }
        query_ms: dict[str, list[float]] = {name: [] for name in models}
        rates: dict[str, list[float]] = {name: [] for name in models}
        for _ in range(rounds):  # interleaved: the machine's load falls on both alike
            for name, model in models.items():
                for query in queries[:60]:
                    started = time.perf_counter()
                    model.embed([query], 1, query=True)
                    query_ms[name].append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                model.embed(batch, 32)
                rates[name].append(len(batch) / (time.perf_counter() - started))
        reference = models["fp32"].embed(batch, 64)
        found = {}
        for name, model in models.items():
            alone = np.vstack([model.embed([text], 1, query=True) for text in batch])
            together = model.embed(batch, 64)
            found[name] = {
                "disk_mb": round(
                    (int8 if name == "int8" else fp32 / "model.onnx").stat().st_size / 1e6
                ),
                "query_ms_p50": round(statistics.median(query_ms[name]), 2),
                "texts_per_s": round(statistics.median(rates[name]), 1),
                "alone_vs_batch_min_cosine": round(float((alone * together).sum(1).min()), 6),
                "vs_fp32_min_cosine": round(float((together * reference).sum(1).min()), 6),
            }
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/model/results"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    fp32 = EmbeddingsSettings(model="all-mpnet-base-v2").resolved_model_path()
    with tempfile.TemporaryDirectory() as tmp:
        int8 = Path(tmp) / "model-int8.onnx"
        weight_only_int8(fp32 / "model.onnx", int8)
        found = _compare(fp32, int8, args.rounds)
    load = Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3]
    result = {"load_after": [float(x) for x in load], **found}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "int8.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
