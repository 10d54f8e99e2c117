"""The course's own data, shipped inside the package so a plain `pip install` runs every chapter.

Read a file with `read_text("tasks.jsonl")`; `DATA_DIR` is the folder as an importlib.resources
Traversable (a real folder for any installed or checked-out package).
"""
from __future__ import annotations

from importlib.resources import files

DATA_DIR = files(__name__)


def read_text(name: str) -> str:
    """The text of one data file, by name."""
    return (DATA_DIR / name).read_text(encoding="utf-8")
