"""Small text helpers shared by the agents and the panels."""
from __future__ import annotations


def shorten(text, limit: int) -> str:
    """`text` on one line (whitespace folded), cut to `limit` characters with "..." when longer."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
