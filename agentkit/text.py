"""Small text helpers shared by the agents and the panels."""
from __future__ import annotations

import unicodedata
from pathlib import Path

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Control (Cc), format (Cf: bidi overrides, zero-width), line/paragraph separators, surrogates, private, unassigned.
_HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"}


def shorten(text, limit: int) -> str:
    """`text` on one line (whitespace folded), cut to `limit` characters with "..." when longer."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_lines(path) -> list[tuple[int, str]]:
    r"""The non-blank lines of a JSON-lines file (a path or a package resource), each with its number from 1.

    Lines end at "\n" only: `str.splitlines()` also ends them at U+2028, U+0085 and others, which JSON
    written with `ensure_ascii=False` keeps inside its strings. Bytes that are not UTF-8 raise a
    ValueError naming the file and the line.
    """
    data = (path if hasattr(path, "read_bytes") else Path(path)).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        number = data.count(b"\n", 0, e.start) + 1
        raise ValueError(f"{path}, line {number}: not UTF-8 text ({e.reason})") from None
    return [(number, line) for number, line in enumerate(text.split("\n"), 1) if line.strip()]


def visible(text, limit: int | None = None) -> str:
    """`text` with every control and format character shown (\\r, <U+202E>), cut after `limit` characters.

    For text a person must judge: a carriage return, a bidi override or a zero-width space would
    otherwise hide or reorder what is on screen.
    """
    text = str(text)
    shown, used = [], 0
    for used, char in enumerate(text[:limit] if limit is not None else text, 1):
        shown.append(_ESCAPES.get(char) or (f"<U+{ord(char):04X}>" if unicodedata.category(char) in _HIDDEN else char))
    cut = len(text) - used if text else 0
    return "".join(shown) + (f" [... {cut:,} more characters]" if cut > 0 else "")


def common_prefix(a, b) -> int:
    """Length of the common start of two texts or lists (binary search on slices: fast on long prompts)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def display_width(text: str) -> int:
    """Columns `text` takes in a monospaced font: wide and full-width characters (Chinese) take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1 for c in text)


def pad(text: str, width: int) -> str:
    """`text` with spaces after it up to `width` columns, as f"{text:{width}}" pads it in English."""
    return text + " " * max(0, width - display_width(text))
