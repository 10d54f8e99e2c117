"""all-MiniLM-L6-v2 in numpy: the tokenizer and the forward pass against references, the SHA-256 pin, and the
retrieval figures chapter 13 draws from the shipped vectors."""
import json
import re
import unicodedata
from importlib import metadata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import minilm
from agentkit.embeddings import SMOLLM2_VECTORS_FILE, NotEmbeddedError, ShippedEmbeddings
from agentkit.memory_data import all_texts, retrieval_set
from agentkit.memory_store import MemoryStore
from agentkit.minilm import MiniLM, ModelNotInstalledError, WeightsMismatchError
from agentkit.retrieval import evaluate_rankings


@pytest.fixture(scope="module")
def model():
    return MiniLM.load()


@pytest.fixture(scope="module")
def tokenizer():
    """The tokenizer alone (hypothesis runs a test many times: no model to load for it)."""
    return minilm.WordPiece(json.loads(minilm.model_files()[1])["model"]["vocab"])


# Token ids from the reference tokenizer (Hugging Face `tokenizers` 0.23.3 reading the same tokenizer.json,
# truncation 256, no padding). Our tokenizer gave the same ids on all 1,123 texts of that comparison.
REFERENCE_IDS = {
    "Café déjà vu — naïve résumé!": [101, 7668, 2139, 3900, 24728, 1517, 15743, 13746, 999, 102],
    "東京タワー is 333 m tall": [101, 1879, 1755, 1709, 30262, 30265, 2003, 21211, 1049, 4206, 102],
    "x\x00y\ufffdz\u200bw tab\there": [101, 1060, 2100, 2480, 2860, 21628, 2182, 102],
    "don't stop-believing; U.S.A. $5.00 (50%)": [101, 2123, 1005, 1056, 2644, 1011, 8929, 1025, 1057, 1012, 1055,
                                                 1012, 1037, 1012, 1002, 1019, 1012, 4002, 1006, 2753, 1003, 1007, 102],
    "[CLS] hello [SEP]": [101, 101, 7592, 102, 102],
    "a" * 101: [101, 100, 102],
    "supercalifragilisticexpialidocious": [101, 3565, 9289, 10128, 29181, 24411, 4588, 10288, 19312, 21273, 10085,
                                           6313, 102],
    "Which port should I connect to for Cedar's data store?": [101, 2029, 3417, 2323, 1045, 7532, 2000, 2005, 11354,
                                                               1005, 1055, 2951, 3573, 1029, 102],
}


@pytest.mark.parametrize("text", list(REFERENCE_IDS), ids=range(len(REFERENCE_IDS)))
def test_the_tokenizer_gives_the_reference_ids(model, text):
    assert model.tokenizer.encode(text) == REFERENCE_IDS[text]


def test_a_long_text_is_cut_to_256_tokens_with_its_end_marker(model):
    ids = model.tokenizer.encode("word " * 400)
    assert len(ids) == 256 and ids[0] == model.tokenizer.cls and ids[-1] == model.tokenizer.sep


def test_the_forward_pass_reproduces_the_documented_similarities(model):
    # sentence-transformers' README, all-MiniLM-L6-v2, printed to 4 decimals.
    sentences = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    documented = np.array([[1.0000, 0.6660, 0.1046], [0.6660, 1.0000, 0.1411], [0.1046, 0.1411, 1.0000]])
    rows = model.embed(sentences)
    assert rows.shape == (3, 384) and rows.dtype == np.float32
    assert np.abs(rows @ rows.T - documented).max() < 1e-4
    # fastembed's test suite (ONNX Runtime): the first five numbers of "hello world", as printed there.
    assert np.abs(model.embed(["hello world"])[0, :5] - [-0.034478, 0.03102, 0.00673, 0.02611, -0.039362]).max() < 1e-5


def test_live_vectors_match_the_shipped_ones_and_padding_changes_nothing(model):
    shipped = ShippedEmbeddings()
    texts = [q["query"] for q in retrieval_set()["queries"][:4]] + [all_texts()[-1]]
    together = model.embed(texts)
    assert np.abs(together - shipped.embed(texts)).max() < 2e-3  # float16 storage, no more
    alone = np.vstack([model.embed([t]) for t in texts])  # each in a batch of its own: no padding at all
    assert np.abs(together - alone).max() < 1e-5
    assert [c.texts for c in model.calls[-len(texts) - 1:]] == [5, 1, 1, 1, 1, 1]
    assert model.calls[-1].prompt_tokens == len(model.tokenizer.encode(texts[-1]))


def test_weights_with_another_sha256_are_refused_before_use(tmp_path, monkeypatch):
    weights, tokenizer_json, _ = minilm.model_files()
    tampered = bytearray(weights)
    tampered[len(weights) // 2] ^= 1  # one bit of one weight
    with pytest.raises(WeightsMismatchError, match=f"not the pinned {minilm.WEIGHTS_SHA256}.*--force-reinstall"):
        MiniLM(bytes(tampered), tokenizer_json)
    with pytest.raises(WeightsMismatchError, match="tokenizer"):
        MiniLM(weights, tokenizer_json.replace(b'"hello"', b'"hullo"'))
    # The installed files go through the same check: here a download cut short.
    (tmp_path / "model.safetensors").write_bytes(weights[:1 << 20])
    (tmp_path / "tokenizer.json").write_bytes(tokenizer_json)
    monkeypatch.setattr(minilm, "_package_file", lambda package, name: tmp_path / name)
    with pytest.raises(WeightsMismatchError, match=re.escape(str(tmp_path))):
        MiniLM.load()
    assert (tmp_path / "model.safetensors").read_bytes() == weights[:1 << 20]  # refused, not repaired


def test_without_either_wheel_the_error_says_what_to_install(monkeypatch):
    def nothing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(minilm.metadata, "distribution", nothing)
    with pytest.raises(ModelNotInstalledError, match=re.escape(minilm.INSTALL) + ".*shipped vectors"):
        MiniLM.load()


def test_shipped_vectors_fall_back_to_the_live_model_of_the_same_name_only(model):
    shipped = ShippedEmbeddings()
    assert all(text in shipped for text in all_texts())
    with pytest.raises(NotEmbeddedError, match="live=MiniLM.load"):
        shipped.embed(["a sentence nobody shipped"])
    mixed = ShippedEmbeddings(live=model).embed(["a sentence nobody shipped", all_texts()[0]])
    assert np.allclose(mixed[0], model.embed(["a sentence nobody shipped"])[0], atol=1e-6)
    with pytest.raises(ValueError, match="cannot be compared"):
        ShippedEmbeddings(SMOLLM2_VECTORS_FILE, live=model)


def rankings(vectors_file):
    data = retrieval_set()
    store = MemoryStore(embedder=ShippedEmbeddings(vectors_file))
    doc_of = dict(zip(store.add_many([d["text"] for d in data["documents"]]), [d["id"] for d in data["documents"]]))
    found = {method: [[doc_of[i] for i in store.search_ids(q["query"], 10, method)] for q in data["queries"]]
             for method in ("keyword", "dense", "fused")}
    gold = [set(q["relevant"]) for q in data["queries"]]
    return found, gold, store


def test_the_chapters_retrieval_figures_come_from_the_shipped_vectors():
    minilm_found, gold, store = rankings("memory_vectors_minilm.npz")
    smollm2_found, _, _ = rankings(SMOLLM2_VECTORS_FILE)
    # The store's dense ranking is the plain cosine ranking of the shipped vectors.
    vectors = store._vector_table()[1]
    queries = store.embedder.embed([q["query"] for q in retrieval_set()["queries"]])
    ids = [d["id"] for d in retrieval_set()["documents"]]
    by_numpy = [[ids[i] for i in np.argsort(-(vectors @ q), kind="stable")[:10]] for q in queries]
    assert sum(a[:3] == b[:3] for a, b in zip(by_numpy, minilm_found["dense"])) >= len(queries) - 1  # float ties
    mrr = lambda found: evaluate_rankings(list(zip(found, gold)))["MRR"]
    # The chapter's conclusions: a retrieval model beats keywords, a chat model's vectors lose to them, and
    # fusing keywords with a weak retriever costs more than it brings.
    assert mrr(minilm_found["dense"]) > mrr(minilm_found["keyword"]) > mrr(smollm2_found["fused"])
    assert mrr(smollm2_found["fused"]) > mrr(smollm2_found["dense"])


# --- a long text costs what its first 256 tokens cost ---------------------------------------------------------

def whole_text_ids(tokenizer, text, max_tokens=minilm.MAX_TOKENS):
    """What the tokenizer gave before it cut early: every word of the whole text in pieces, then the first 254."""
    ids = []
    for part in minilm.SPECIAL.split(text):
        ids += [tokenizer.vocab[part]] if minilm.SPECIAL.fullmatch(part) else \
            [i for w in minilm.words(part) for i in tokenizer.pieces(w)]
    return [tokenizer.cls, *ids[:max_tokens - 2], tokenizer.sep]


class Counting:
    """unicodedata with its calls counted (the per-character work of normalising a text)."""

    def __init__(self, module):
        self.module, self.calls = module, 0

    def __getattr__(self, name):
        found = getattr(self.module, name)
        if not callable(found):
            return found

        def counted(*args):
            self.calls += 1
            return found(*args)
        return counted


@pytest.mark.parametrize("text", [
    "Cedar keeps three replicas of its data. " * 25_000,  # 1 MB of prose: 8 s of tokenising for 256 tokens
    "word\x0bglued\x1cby\x85separators\u3000and [SEP] specials " * 2_000,  # characters that glue, and specials
    "東京は日本の首都です" * 10_000,  # no spaces: cut before an ideograph
])
def test_a_long_text_is_cut_before_the_whole_of_it_is_tokenised(model, monkeypatch, text):
    reference = whole_text_ids(model.tokenizer, text)
    counting = Counting(minilm.unicodedata)
    monkeypatch.setattr(minilm, "unicodedata", counting)
    normalised = []
    real = minilm.normalize
    monkeypatch.setattr(minilm, "normalize", lambda t: normalised.append(len(t)) or real(t))
    assert model.tokenizer.encode(text) == reference and len(reference) == minilm.MAX_TOKENS
    assert sum(normalised) <= 5_000 and counting.calls <= 10_000  # a few thousand characters, not a million


@pytest.mark.parametrize("text", ["a" * 200_000, "\x01" * 200_000 + "end", "é" * 100_000, "!" * 100_000,
                                  "タワー" * 30_000])  # the old loop looked at each character: 100,000 lookups
def test_a_text_with_no_place_to_cut_is_normalised_once_per_distinct_character(model, monkeypatch, text):
    reference = whole_text_ids(model.tokenizer, text)
    counting = Counting(minilm.unicodedata)
    monkeypatch.setattr(minilm, "unicodedata", counting)
    pieces = []
    real = model.tokenizer.pieces
    monkeypatch.setattr(model.tokenizer, "pieces", lambda word: pieces.append(word) or real(word))
    assert model.tokenizer.encode(text) == reference
    assert counting.calls <= 100 and len(pieces) <= minilm.MAX_TOKENS  # the old loop called it per character


def reference_normalize(text):
    """The tokenizer's normalisation as the module's docstring states it, one character at a time."""
    out = []
    for c in text:
        if c in "\t\n\r" or c.isspace() and not unicodedata.category(c).startswith("C"):
            out.append(" ")
        elif c == "\0" or c == "\ufffd" or unicodedata.category(c).startswith("C"):
            continue
        elif minilm._is_cjk(c):
            out.append(f" {c} ")
        else:
            out.append(c)
    text = "".join(c for c in unicodedata.normalize("NFD", "".join(out)) if unicodedata.category(c) != "Mn")
    return text.lower()


def reference_words(text):
    found = []
    for chunk in reference_normalize(text).split():
        word = ""
        for c in chunk:
            if minilm._is_punctuation(c):
                found += [word, c] if word else [c]
                word = ""
            else:
                word += c
        if word:
            found.append(word)
    return found


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_normalising_by_distinct_characters_is_normalising_one_by_one(text):
    assert minilm.normalize(text) == reference_normalize(text)
    assert minilm.words(text) == reference_words(text)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(["Cedar", "[SEP]", " ", "\n", "\x0b", "\x1c", "\u3000", "東", "é", "!", "a" * 60,
                                 "x\u0301", "\x00", "don't", "ΟΔΟΣ", "'", "ΑΣ.Α", "京"]), max_size=400))
def test_cutting_early_gives_the_ids_of_the_whole_text(tokenizer, parts):
    text = "".join(parts)
    assert tokenizer.encode(text) == whole_text_ids(tokenizer, text)
    assert tokenizer.encode(text, max_tokens=12) == whole_text_ids(tokenizer, text, max_tokens=12)
