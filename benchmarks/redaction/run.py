"""What redaction costs and what it wrongly takes: false positives on texts with no secrets,
and time per text against the model's time to embed it.

    python -m benchmarks.redaction.run --locomo ../shared/datasets/locomo/locomo_dev.json \
        --longmemeval ../shared/datasets/longmemeval/longmemeval_s_dev70.json.gz \
        --out benchmarks/redaction/results

Corpora: LoCoMo and LongMemEval turns (conversations: any redaction there is a false
positive), and code and tool output collected on this machine (the installed packages'
sources and configs, this repository's git history with diffs, pip's listings), cut into
2 KB texts as a loop would store them. Code may hold real secret shapes (test keys, AWS's
documented example key): its findings are listed with their surroundings to be read, and
counted by kind. Speed: the redactor's time per 2 KB text (p50, p99) and its share of an
ingest, against the model embedding the same texts in batches.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import sysconfig
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ralph_context.config import Settings
from ralph_context.embeddings.local import load_embedder
from ralph_context.privacy import MARK, Redactor

__all__ = ["main", "measure"]

CHUNK = 2_048
_SUFFIXES = (".py", ".json", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".md", ".txt", ".sh")
_EXAMPLES_PER_KIND = 6
_BEFORE_REDACTION = "363f2f0"


def locomo_turns(path: Path) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    turns: list[str] = []
    for sample in data:
        conversation = sample["conversation"]
        for key, session in conversation.items():
            if key.startswith("session_") and isinstance(session, list):
                turns.extend(turn["text"] for turn in session if turn.get("text"))
    return turns


def longmemeval_turns(path: Path, limit: int) -> list[str]:
    opened = gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open()
    with opened as handle:
        data = json.load(handle)
    seen: dict[str, None] = {}
    for question in data:
        for session in question["haystack_sessions"]:
            for turn in session:
                seen.setdefault(turn["content"], None)
    return list(seen)[:limit]


def chunks(text: str) -> Iterator[str]:
    for start in range(0, len(text), CHUNK):
        piece = text[start : start + CHUNK]
        if piece.strip():
            yield piece


def code_texts(files: int) -> list[str]:
    """Installed packages' files (every n-th of the sorted list, up to ``files``), 2 KB each."""
    root = Path(sysconfig.get_paths()["purelib"])
    found = sorted(p for p in root.rglob("*") if p.suffix in _SUFFIXES and p.is_file())
    step = max(1, len(found) // files)
    texts: list[str] = []
    for path in found[::step][:files]:
        try:
            texts.extend(chunks(path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
    return texts


def tool_output() -> list[str]:
    """What a loop's tools print: git history with diffs (up to the commit before redaction
    was added, whose tests plant secret shapes on purpose), pip's listings."""
    commands = [
        ["git", "log", "-p", "-n", "150", "--no-color", _BEFORE_REDACTION],
        ["git", "log", "--stat", "-n", "400", "--no-color", _BEFORE_REDACTION],
        [sys.executable, "-m", "pip", "list", "-v"],
        [sys.executable, "-m", "pip", "freeze"],
    ]
    texts: list[str] = []
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        texts.extend(chunks(done.stdout))
    return texts


def scan(redactor: Redactor, texts: list[str]) -> dict[str, Any]:
    """Texts changed, by kind, with examples of each kind in their surroundings."""
    kinds: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    changed = 0
    for text in texts:
        redacted = redactor.text(text)
        if not redacted.found:
            continue
        changed += 1
        kinds.update(redacted.found)
        for match in MARK.finditer(redacted.text):
            shown = examples.setdefault(match.group(1), [])
            if len(shown) < _EXAMPLES_PER_KIND:
                around = redacted.text[max(0, match.start() - 60) : match.end() + 40]
                shown.append(" ".join(around.split()))
    return {
        "texts": len(texts),
        "changed": changed,
        "changed_per_1000": round(1000 * changed / max(1, len(texts)), 2),
        "by_kind": dict(kinds.most_common()),
        "examples": examples,
    }


def timing(redactor: Redactor, texts: list[str]) -> dict[str, float]:
    """Milliseconds per text (p50, p99, mean) over ``texts``, each timed alone."""
    spent = []
    for text in texts:
        started = time.perf_counter()
        redactor.text(text)
        spent.append(time.perf_counter() - started)
    spent.sort()
    return {
        "texts": len(spent),
        "p50_ms": round(1000 * spent[len(spent) // 2], 4),
        "p99_ms": round(1000 * spent[int(len(spent) * 0.99)], 4),
        "mean_ms": round(1000 * sum(spent) / len(spent), 4),
    }


def ingest_share(redactor: Redactor, texts: list[str]) -> dict[str, float]:
    """The redactor's time as a share of the model's for the same texts, batched as
    ``store_contexts`` embeds them (what batch ingest pays on top)."""
    embedder = load_embedder(Settings.load(None).embeddings)
    embedder.embed(texts[:32], 32)  # warm up
    started = time.perf_counter()
    for start in range(0, len(texts), 32):
        embedder.embed(texts[start : start + 32], 32)
    embedding = time.perf_counter() - started
    started = time.perf_counter()
    for text in texts:
        redactor.text(text)
    redacting = time.perf_counter() - started
    return {
        "texts": len(texts),
        "embed_s": round(embedding, 3),
        "redact_s": round(redacting, 4),
        "share_percent": round(100 * redacting / embedding, 2),
    }


def load() -> float:
    return round(float(Path("/proc/loadavg").read_text().split()[0]), 2)


def measure(locomo: Path, longmemeval: Path | None, files: int, lme_turns: int) -> dict[str, Any]:
    redactor = Redactor()
    corpora: dict[str, list[str]] = {"locomo_turns": locomo_turns(locomo)}
    if longmemeval is not None:
        corpora["longmemeval_turns"] = longmemeval_turns(longmemeval, lme_turns)
    corpora["code_2kb"] = code_texts(files)
    corpora["tool_output_2kb"] = tool_output()
    results: dict[str, Any] = {"load_before": load()}
    results["false_positives"] = {name: scan(redactor, texts) for name, texts in corpora.items()}
    code = corpora["code_2kb"]
    results["time_per_text"] = {
        "code_2kb": timing(redactor, code),
        "locomo_turns": timing(redactor, corpora["locomo_turns"]),
    }
    # What a loop stores most: short turns and outputs; a few code pages among them.
    results["ingest"] = ingest_share(redactor, corpora["locomo_turns"][:1_500] + code[:100])
    results["load_after"] = load()
    return results


def markdown(results: dict[str, Any]) -> str:
    lines = [
        f"Redaction on texts with no planted secret (load {results['load_before']}"
        f"-{results['load_after']}, 2 cores)",
        "",
        "| corpus | texts | changed | per 1,000 | kinds |",
        "|---|---:|---:|---:|---|",
    ]
    for name, found in results["false_positives"].items():
        kinds = ", ".join(f"{k} {n}" for k, n in found["by_kind"].items()) or "-"
        lines.append(
            f"| {name} | {found['texts']:,} | {found['changed']} | "
            f"{found['changed_per_1000']} | {kinds} |"
        )
    lines += ["", "| time per text | p50 ms | p99 ms | mean ms |", "|---|---:|---:|---:|"]
    for name, row in results["time_per_text"].items():
        lines.append(f"| {name} | {row['p50_ms']} | {row['p99_ms']} | {row['mean_ms']} |")
    ingest = results["ingest"]
    lines += [
        "",
        f"Batch ingest: redacting {ingest['texts']:,} texts (LoCoMo turns, 100 code pages of 2 KB)"
        f" took {ingest['redact_s']} s "
        f"against {ingest['embed_s']} s to embed them: +{ingest['share_percent']}%.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--longmemeval", type=Path)
    parser.add_argument("--files", type=int, default=3_000, help="package files read")
    parser.add_argument("--lme-turns", type=int, default=20_000, help="LongMemEval turns read")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/redaction/out"))
    args = parser.parse_args(argv)
    results = measure(args.locomo, args.longmemeval, args.files, args.lme_turns)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (args.out / "results.md").write_text(markdown(results) + "\n", encoding="utf-8")
    print(markdown(results))


if __name__ == "__main__":
    main()
