"""Progress: what this kernel's checks said, and a small JSON file {exercise id: "correct"} in the folder the
notebook runs from, so a solved exercise stays solved in a new kernel; progress(chapter) shows both. An answer
that was shown (reveal=True, three wrong tries, show_solution) is kept as "revealed", and a right answer after
that as "shown": neither counts as solved, in this kernel or the next.

The file is read and written as a regular file only. A link in its place (a folder can ship one, pointing
anywhere) is never followed: not read, not written, not removed. A FIFO or a device is not read (it would
block the kernel), a file over MAX_BYTES is not read, and JSON that is damaged, nested too deep or of
another shape counts as empty. A write goes to a new file beside it, then os.replace puts it in place, so
a crash mid-write never leaves half a file. Any failure leaves progress in the kernel only: never an error.
"""
from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Optional

from ..i18n import tr, tr_later
from ..text import pad
from .core import CHAPTERS, NOT_DONE, PROGRESS_FILE, REGISTRY, SHOWN, Report, _load, _Now, note, shown

MAX_BYTES = 1_000_000
KINDS = {"predict": tr_later("predict"), "build": tr_later("build"), "break": tr_later("break")}  # as progress() says them
KEPT = ("correct", SHOWN, "revealed")  # the file's values: solved, right after the answer was shown, answer shown
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # Windows has none: the lstat below refuses links there
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def problem(path: Path) -> Optional[str]:
    """Why `path` cannot be the progress file ("a link", "not a regular file"), or None if it can (or is absent)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as e:
        return tr("unreadable ({error})", error=type(e).__name__)
    if stat.S_ISLNK(mode):
        return tr("a link, which progress never follows")
    if not stat.S_ISREG(mode):
        return tr("not a regular file")
    return None


def read(path: Path) -> dict:
    """{id: one of KEPT} from the file, or {} when it is absent, refused or damaged."""
    if problem(path) is not None:
        return {}
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | getattr(os, "O_BINARY", 0))
    except OSError:
        return {}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {}
        with os.fdopen(fd, "rb", closefd=False) as file:
            raw = file.read(MAX_BYTES + 1)
    except OSError:
        return {}
    finally:
        os.close(fd)
    if len(raw) > MAX_BYTES:
        return {}
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested past the parser's depth
        return {}
    if not isinstance(data, dict):
        return {}
    return {key: value for key, value in data.items() if isinstance(key, str) and value in KEPT}


def write(path: Path, data: dict) -> bool:
    """Replace the file with `data`; False (nothing written) when the path is refused or the folder read-only."""
    if problem(path) is not None:
        return False
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    try:
        fd, temporary = tempfile.mkstemp(prefix=".agentkit-progress-", suffix=".tmp", dir=path.parent)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        if problem(path) is not None:  # a link planted meanwhile: os.replace would replace the link, not
            raise OSError("refused")  # its target, but the folder's link is not ours to remove
        os.replace(temporary, path)
        return True
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        return False


def remove(path: Path) -> None:
    """Delete the file if it is a regular file of its own; a link or anything else stays."""
    if problem(path) is None:
        try:
            os.unlink(path)
        except OSError:
            pass


# --- what progress() shows ----------------------------------------------------------------------------


def progress_path() -> Optional[Path]:
    setting = os.environ.get("AGENTKIT_PROGRESS", "")
    if setting.lower() == "off":
        return None
    return Path(setting) if setting else Path.cwd() / PROGRESS_FILE


def _read_file() -> dict:
    path = progress_path()
    return {} if path is None else read(path)


def record(id: str, status: str) -> None:
    """Keep what a check or a question said: in this kernel, and a solved one in the progress file."""
    if status not in ("correct", "wrong", NOT_DONE, SHOWN) or _Now.running:  # a check's own code never records
        return
    REGISTRY.done[id] = status
    if status == "wrong":
        REGISTRY.tries[id] = REGISTRY.tries.get(id, 0) + 1
    if status in ("correct", SHOWN):
        _save(id, status)


def _save(id: str, value: str) -> None:
    path = progress_path()
    if path is None:
        return
    data = _read_file()
    if data.get(id) == "correct" or data.get(id) == value:
        return  # solved stays solved
    data[id] = value
    write(path, data)  # False: a read-only folder, or a link refused; progress stays in this kernel


def mark_shown(id: str) -> None:
    """The answer to `id` was shown: a right answer from now on matches what was shown."""
    REGISTRY.shown.add(id)
    if REGISTRY.done.get(id) != "correct":
        _save(id, "revealed")


def was_shown(id: str) -> bool:
    """Was the answer to `id` shown, in this kernel or (as the progress file says) an earlier one, before it was solved?"""
    return REGISTRY.done.get(id) != "correct" and (id in REGISTRY.shown or _read_file().get(id) in (SHOWN, "revealed"))


def reset_progress() -> None:
    """Forget every solved exercise: in this kernel and in the progress file (a link in its place stays)."""
    if _Now.running:
        note(tr("your code called reset_progress() while a check was running: refused"))
        return
    REGISTRY.done.clear()
    REGISTRY.tries.clear()
    REGISTRY.shown.clear()
    path = progress_path()
    if path is not None:
        remove(path)


def progress(chapter: str) -> Report:
    """A table of chapter `chapter`'s exercises and questions: done in this kernel, or in the progress file."""
    chapter = str(chapter)
    if not _load(chapter):
        return Report(tr("No chapter {chapter}. The chapters are {chapters}.", chapter=shown(chapter),
                         chapters=", ".join(CHAPTERS)))
    saved_now = _read_file()
    items = [(e.id, f"{tr(KINDS.get(e.kind, e.kind))}: {tr(e.title)}") for e in REGISTRY.exercises.values()
             if e.id.startswith(chapter + ".")]
    items += [(q.id, tr("concept question")) for q in REGISTRY.questions.values() if q.id.startswith(chapter + ".")]
    lines = [tr("Chapter {chapter}: check yourself", chapter=chapter)]
    for id, title in items:
        here, saved = REGISTRY.done.get(id), saved_now.get(id)
        mark = (tr("done") if here == "correct" else tr("done (earlier)") if saved == "correct" else
                tr("matches the answer shown") if SHOWN in (here, saved) else
                tr("tried, not yet") if here == "wrong" else tr("not done yet"))
        solved = "correct" in (here, saved) or SHOWN in (here, saved)
        if (id in REGISTRY.shown or saved == "revealed") and not solved:
            mark = (tr("{mark}, answer shown", mark=mark) if here == "wrong" else  # "tried, not yet"
                    tr("{mark} (answer shown)", mark=mark))
        lines.append(f"  {id:10} {pad(title, 48)} {mark}")  # Chinese characters take two columns
    done = sum(1 for id, _ in items if REGISTRY.done.get(id) == "correct" or saved_now.get(id) == "correct")
    matched = sum(1 for id, _ in items if REGISTRY.done.get(id) != "correct" and saved_now.get(id) != "correct"
                  and SHOWN in (REGISTRY.done.get(id), saved_now.get(id)))
    lines.append(tr("{done} of {items} done; {matched} matched an answer shown first.", done=done, items=len(items),
                    matched=matched) if matched else tr("{done} of {items} done.", done=done, items=len(items)))
    others = sorted({id.split('.')[0] for id, value in saved_now.items() if value == "correct"} - {chapter})
    if others:
        lines.append(tr("Other chapters with solved exercises: {chapters}.", chapters=", ".join(others)))
    path = progress_path()
    refused = path is not None and problem(path)
    if refused:
        lines.append(tr("The progress file {name} is {problem}: progress is kept in this kernel only.", name=path.name,
                        problem=refused))
    return Report("\n".join(lines))
