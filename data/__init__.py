"""The course's own data: this folder is `data/` in a checkout and the package `agentkit.data` once installed.

pyproject.toml maps one onto the other, so a wheel carries every file and a plain `pip install` runs every
chapter. Read a file with `read_text("tasks.jsonl")`; `DATA_DIR` is the folder as an importlib.resources
Traversable, the same in a checkout (editable install) and from a wheel: no code reads it by a checkout path.
"""
from __future__ import annotations

from importlib.resources import files

DATA_DIR = files(__name__)


def read_text(name: str) -> str:
    """The text of one data file, by name."""
    return (DATA_DIR / name).read_text(encoding="utf-8")
