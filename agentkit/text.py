"""Small text helpers shared by the agents and the panels."""
from __future__ import annotations

from pathlib import Path


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
