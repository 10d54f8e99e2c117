"""What a replay says when a request is not on its cassette: the closest recorded request, and how they differ.

`readable(request)` writes a request as lines of text (each message's lines, then the tools offered).
`closest(entries, texts, wanted)` picks the recorded request most like `wanted`: a cheap measure ranks
them all (the shared start, then the length), and only the best CANDIDATES are compared line by line.
`diff_lines(recorded, asked)` is their unified diff, over at most DIFF_LINES differing lines of each (a
diff's work grows with the product of the lines it compares), long lines cut to LINE_WIDTH.
`current_cell(notebook)` names the notebook cell that asked, inside a kernel.
"""
from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

from .protocol import prompt_text
from .text import common_prefix

CANDIDATES = 8  # recorded requests compared in full when a request misses (the rest by a cheap measure)
LINE_WIDTH = 240  # longer diff lines are cut, so a miss on a long prompt stays readable
DIFF_LINES = 200  # differing lines of each request a miss compares at most (a diff is quadratic in them)


def readable(request: dict) -> str:
    """A request as text for comparing: each message on its own lines, then the tools offered."""
    tools = [t.get("function", {}).get("name", "?") for t in request.get("tools") or []]
    extras = "".join(f"   [{key}] {request[key]}" for key in ("llm",) if request.get(key))
    grammar = [f"[grammar] {line}" for line in request["grammar"].splitlines()] if request.get("grammar") else []
    return "\n".join([
        *(f"[{m.get('role')}] {line}" for m in request["messages"] for line in prompt_text([m]).splitlines() or [""]),
        f"[tools] {', '.join(tools) or '(none)'}   [tool_choice] {request.get('tool_choice')}   "
        f"[temperature] {request.get('temperature')}" + extras,
        *grammar,
    ])


def closest(entries: list[dict], texts: dict[int, str], wanted: str) -> dict:
    """The recorded request most like `wanted` (`texts` holds each entry's readable text, by id)."""
    def cheap(entry):
        text = texts[id(entry)]
        return -common_prefix(text, wanted), abs(len(text) - len(wanted))

    def similarity(entry):  # SequenceMatcher's ratio, over the lines that differ at most DIFF_LINES of each
        recorded, asked = texts[id(entry)].splitlines(), wanted.splitlines()
        shared, _, a, b, _ = _window(recorded, asked)
        blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
        same = sum(block.size for block in blocks)
        return 2 * (shared + same) / max(1, len(recorded) + len(asked))

    return max(sorted(entries, key=cheap)[:CANDIDATES], key=similarity)


def diff_lines(recorded_text: str, wanted: str) -> str:
    """Where two readable requests differ: a unified diff (its first 40 lines), and the first differing character."""
    recorded, asked = recorded_text.splitlines(), wanted.splitlines()
    _, skip, a, b, cut = _window(recorded, asked, context=1)
    shown = [_cut(_shift(line, skip)) for line in difflib.unified_diff(
        a, b, "closest recorded request", "this request", n=1, lineterm="")]
    more = f"\n... ({len(shown) - 40} more diff lines)" if len(shown) > 40 else ""
    if cut:
        more += f"\n(the diff compares the first {DIFF_LINES} lines of each where they differ)"
    if any(line.endswith(" more characters)") for line in shown):
        at = common_prefix(recorded_text, wanted)
        more += (f"\nThe first difference is at character {at}: recorded {recorded_text[at:at + 60]!r}, "
                 f"this request {wanted[at:at + 60]!r}.")
    return "\n".join(shown[:40]) + more


def _window(a: list[str], b: list[str], context: int = 0) -> tuple[int, int, list[str], list[str], bool]:
    """Two texts' lines without the lines they share at start and end (bar `context` lines either side),
    the lines between cut to DIFF_LINES.

    Returns the shared lines left out, the lines left out before, what is left of a and of b, and
    whether either was cut.
    """
    start = common_prefix(a, b)
    end = common_prefix(a[start:][::-1], b[start:][::-1])
    skip = max(0, start - context)

    def side(lines):
        if len(lines) - start - end > DIFF_LINES:
            return lines[skip:start + DIFF_LINES], True
        return lines[skip:len(lines) - end + min(end, context)], False

    (a, cut_a), (b, cut_b) = side(a), side(b)
    return start + end, skip, a, b, cut_a or cut_b


def _shift(line: str, skip: int) -> str:
    """A unified diff's hunk header, renumbered for the `skip` lines left out before it."""
    if not skip or not line.startswith("@@ "):
        return line
    return re.sub(r"([-+])(\d+)", lambda m: f"{m[1]}{int(m[2]) + skip}", line, count=2)



def _cut(line: str) -> str:
    return line if len(line) <= LINE_WIDTH else f"{line[:LINE_WIDTH]}... ({len(line) - LINE_WIDTH} more characters)"


def current_cell(notebook: str) -> str:
    """The running notebook cell, as "cell N" (counting Markdown cells, from 1), or "" outside a kernel."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is None:
            return ""
        cell_id = ((shell.get_parent() or {}).get("metadata") or {}).get("cellId") if hasattr(shell, "get_parent") else None
        source = shell.history_manager.input_hist_raw[-1].strip()
        cells = json.loads(Path(f"{notebook}.ipynb").read_text(encoding="utf-8"))["cells"]
        for number, cell in enumerate(cells, 1):
            text = "".join(cell.get("source", [])).strip()
            if (cell_id and cell.get("id") == cell_id) or (not cell_id and text == source):
                return f"cell {number}"
        return f"the cell run as In [{shell.execution_count}]"
    except Exception:  # noqa: BLE001 - naming the cell is a courtesy; the miss itself must still be raised
        return ""
