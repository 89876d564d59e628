"""Record the reference vectors an installed all-mpnet-base-v2 must reproduce, once.

No torch is installable on these machines, so the reference is the float64 numpy forward
pass of ``benchmarks/model/mpnet_numpy.py``, written independently of the ONNX graph, over
the tokens Hugging Face's ``tokenizers`` gives with the model's own ``tokenizer.json``
(truncated at sentence-transformers' 384). The texts are the kinds a store holds: prose, a
question, code, a traceback, a long text past the truncation, and one of one token.

    python -m benchmarks.model.record FOLDER    # the unzipped sentence-transformers folder

writes ``ralph_context/embeddings/references/all-mpnet-base-v2.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.model.mpnet_numpy import sentence_vectors
from ralph_context.embeddings.mpnet_install import MPNET
from ralph_context.embeddings.safetensors import read_safetensors

__all__ = ["TEXTS", "record"]

TEXTS = (
    "hello world",
    "What did the user decide about the release notes?",
    "Release notes go in CHANGELOG.md, newest first, under the version being prepared.",
    "$ pytest -q tests/billing ⏎ ImportError: cannot import name 'render_invoice' from "
    "'billing.pdf' (src/billing/pdf.py)",
    "def merge(left: list[int], right: list[int]) -> list[int]:\n    out = []\n"
    "    while left and right:\n"
    "        out.append((left if left[0] < right[0] else right).pop(0))\n"
    "    return out + left + right",
    "Caroline went to the LGBTQ support group on Tuesday and said it was powerful. " * 30,
    "ok",
)


def record(folder: Path) -> dict[str, object]:
    """The reference of the model in ``folder``: its texts, vectors and how they were made."""
    from tokenizers import Tokenizer

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    max_tokens = int(
        json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))[
            "max_seq_length"
        ]
    )
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_tokens)
    weights = read_safetensors(folder / "model.safetensors")
    vectors = []
    for text in TEXTS:  # one at a time: no padding in the reference
        encoding = tokenizer.encode(text)
        ids = np.asarray([encoding.ids], dtype=np.int64)
        mask = np.asarray([encoding.attention_mask], dtype=np.int64)
        vectors.append(sentence_vectors(weights, config, ids, mask)[0])
    return {
        "model": MPNET.name,
        "recorded_with": "benchmarks/model/mpnet_numpy.py (float64 numpy), tokenizers "
        f"{_version('tokenizers')}, numpy {np.__version__}, max {max_tokens} tokens",
        "texts": list(TEXTS),
        "vectors": [[round(float(x), 8) for x in vector] for vector in vectors],
    }


def _version(distribution: str) -> str:
    from importlib import metadata

    return metadata.version(distribution)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the unzipped sentence-transformers folder")
    args = parser.parse_args()
    started = time.perf_counter()
    reference = record(args.folder)
    MPNET.reference.parent.mkdir(parents=True, exist_ok=True)
    MPNET.reference.write_text(json.dumps(reference) + "\n", encoding="utf-8")
    print(f"{len(TEXTS)} vectors in {time.perf_counter() - started:.1f} s -> {MPNET.reference}")


if __name__ == "__main__":
    main()
