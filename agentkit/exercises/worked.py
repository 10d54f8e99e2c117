"""The worked solutions, read where the learner is: `agentkit.solutions` in a wheel or on Colab, `solutions/`
in a checkout. show_solution(id) prints one exercise's block (its reasoning and its code), never the others."""
from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from ..i18n import tr

BLOCK = re.compile(r"^# (\d\d[a-z]?\.\w+) — ", re.MULTILINE)


def solutions_file(chapter: str) -> str:
    """The text of solutions/chNN.py, from the installed package, or from the checkout beside agentkit/."""
    name = f"ch{chapter}.py"
    try:
        return resources.files("agentkit.solutions").joinpath(name).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):  # an install older than the package: the checkout's folder
        return (Path(__file__).resolve().parents[2] / "solutions" / name).read_text(encoding="utf-8")


def block(text: str, id: str) -> str:
    """The comment-and-code block of `id` in a solutions file, with the imports it uses; "" if there is none."""
    starts = [(m.start(), m.group(1)) for m in BLOCK.finditer(text)]
    end_of_file = text.find("\nSOLUTIONS")
    for number, (start, found) in enumerate(starts):
        if found == id:
            end = starts[number + 1][0] if number + 1 < len(starts) else end_of_file
            body = text[start:end if end > start else len(text)].rstrip()
            head = text[: starts[0][0]]
            imports = [line for line in head.splitlines() if re.match(r"(import|from) \w", line)
                       and any(re.search(rf"\b{re.escape(name)}\b", body) for name in _names(line))]
            return "\n".join(imports + ([""] if imports else []) + [body])
    return ""


def _names(line: str) -> list:
    if line.startswith("from "):
        return [n.strip().split(" as ")[-1] for n in line.split(" import ", 1)[1].split(",")]
    return [n.strip().split(" as ")[-1].split(".")[0] for n in line[len("import "):].split(",")]


def solution_text(found) -> str:
    """What show_solution shows for an exercise or a question (the right option, and why)."""
    chapter = found.id.split(".")[0]
    try:
        whole = solutions_file(chapter)
    except OSError:
        whole = ""
    text = block(whole, found.id)
    if not text and not hasattr(found, "options") and found.id in whole:  # a file without "# id — " blocks
        text = whole.split("\nSOLUTIONS", 1)[0].strip()
    if hasattr(found, "options"):
        letter = found.answer
        option, _, why = found.options[letter]
        return "\n".join([f"{found.id}: {letter}) {tr(option)}", tr("  Why: {why}", why=tr(why))]
                         + ([text] if text else []))
    if not text:
        return tr("No worked solution for {id} is installed here.", id=found.id)
    return tr("{id} {title}, worked solution (open it after you have tried):", id=found.id, title=tr(found.title)) \
        + f"\n\n{text}"
