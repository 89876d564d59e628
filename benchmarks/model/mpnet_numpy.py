"""A reference forward pass of MPNet in float64 numpy, written from Hugging Face's
``modeling_mpnet`` independently of the ONNX graph (``embeddings/mpnet_graph.py``).

No torch is installable here, so this is what the built graph is checked against: the
recorded reference vectors of all-mpnet-base-v2 (``python -m benchmarks.model.record``)
and, in the tests, a tiny random model of the same architecture. It shares no code with the
graph builder: positions, buckets, attention and pooling are written again, in float64, so
a mistake in one shows as a difference from the other.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

__all__ = ["sentence_vectors"]

Array = NDArray[np.float64]


def sentence_vectors(
    weights: Mapping[str, NDArray[np.generic]],
    config: Mapping[str, object],
    input_ids: NDArray[np.int64],
    attention_mask: NDArray[np.int64],
) -> Array:
    """sentence-transformers' vectors (mean over the mask of the last hidden state, then
    L2-normalised) of a padded batch of token ids."""
    hidden = _encode(weights, config, input_ids, attention_mask)
    mask = attention_mask[:, :, None].astype(np.float64)
    pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    unit: Array = pooled / np.maximum(norms, 1e-12)
    return unit


def _w(weights: Mapping[str, NDArray[np.generic]], name: str) -> Array:
    return np.asarray(weights[name], dtype=np.float64)


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    normed: Array = (x - mean) / np.sqrt(var + eps) * weight + bias
    return normed


def _bucket(
    relative: NDArray[np.int64], buckets: int, max_distance: int = 128
) -> NDArray[np.int64]:
    """``MPNetEncoder.relative_position_bucket``, elementwise (its log in float32, as torch)."""
    out = np.zeros_like(relative)
    for index, value in np.ndenumerate(relative):
        n = -int(value)
        half = buckets // 2
        ret = half if n < 0 else 0
        n = abs(n)
        exact = half // 2
        if n < exact:
            ret += n
        else:
            scaled = np.float32(
                np.log(np.float32(n) / np.float32(exact))
                / np.float32(math.log(max_distance / exact))
            )
            ret += min(exact + int(scaled * np.float32(half - exact)), half - 1)
        out[index] = ret
    return out


def _encode(
    weights: Mapping[str, NDArray[np.generic]],
    config: Mapping[str, object],
    input_ids: NDArray[np.int64],
    attention_mask: NDArray[np.int64],
) -> Array:
    pad = int(str(config["pad_token_id"]))
    eps = float(str(config["layer_norm_eps"]))
    heads = int(str(config["num_attention_heads"]))
    layers = int(str(config["num_hidden_layers"]))
    buckets = int(str(config.get("relative_attention_num_buckets", 32)))
    batch, length = input_ids.shape

    not_pad = (input_ids != pad).astype(np.int64)
    positions = np.cumsum(not_pad, axis=1) * not_pad + pad
    x = _w(weights, "embeddings.word_embeddings.weight")[input_ids]
    x = x + _w(weights, "embeddings.position_embeddings.weight")[positions]
    x = _layer_norm(
        x, _w(weights, "embeddings.LayerNorm.weight"), _w(weights, "embeddings.LayerNorm.bias"), eps
    )

    query_at = np.arange(length)[:, None]
    key_at = np.arange(length)[None, :]
    table = _w(weights, "encoder.relative_attention_bias.weight")  # buckets x heads
    bias = table[_bucket(key_at - query_at, buckets)].transpose(2, 0, 1)[None]
    mask = (1.0 - attention_mask[:, None, None, :].astype(np.float64)) * np.finfo(np.float32).min

    hidden = x.shape[-1]
    width = hidden // heads

    def linear(h: Array, prefix: str) -> Array:
        return h @ _w(weights, f"{prefix}.weight").T + _w(weights, f"{prefix}.bias")

    def split(h: Array) -> Array:
        return h.reshape(batch, length, heads, width).transpose(0, 2, 1, 3)

    for layer in range(layers):
        at = f"encoder.layer.{layer}"
        q = split(linear(x, f"{at}.attention.attn.q"))
        k = split(linear(x, f"{at}.attention.attn.k"))
        v = split(linear(x, f"{at}.attention.attn.v"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(width) + bias + mask
        scores = scores - scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs = probs / probs.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
        attended = _layer_norm(
            linear(context, f"{at}.attention.attn.o") + x,
            _w(weights, f"{at}.attention.LayerNorm.weight"),
            _w(weights, f"{at}.attention.LayerNorm.bias"),
            eps,
        )
        inner = linear(attended, f"{at}.intermediate.dense")
        inner = 0.5 * inner * (1.0 + _erf(inner / math.sqrt(2.0)))
        x = _layer_norm(
            linear(inner, f"{at}.output.dense") + attended,
            _w(weights, f"{at}.output.LayerNorm.weight"),
            _w(weights, f"{at}.output.LayerNorm.bias"),
            eps,
        )
    return x


_vector_erf = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x: Array) -> Array:
    return np.asarray(_vector_erf(x), dtype=np.float64)
