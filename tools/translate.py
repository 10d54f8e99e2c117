"""The Chinese edition, built from the English notebooks: the same code and outputs, translated prose.

    python tools/translate.py build            # write notebooks/zh-CN/*.ipynb from the English ones
    python tools/translate.py status [NN]      # which cells have no translation, or one made from older English
    python tools/translate.py status -v NN     # ... with what changed in the English since it was translated
    python tools/translate.py sync NN          # add blocks for new cells to NN's translation file, drop gone ones
    python tools/translate.py accept NN ID...  # after updating a translation: record the English it now follows

A translation file (translations/zh-CN/NN_topic.md) holds, for every Markdown cell of the English notebook, the
cell's id, the English text it was translated from, and the translation:

    %%% cell 34dc0976
    %%% en
    (the English, exactly as it was when translated: never edit it by hand)
    %%% zh
    (the translation: edit freely)

A Chinese notebook is the English one with each Markdown cell's source replaced by its translation: every code
cell, every output and the notebook's metadata are the English notebook's, byte for byte, so it is never executed
a second time. A translation whose English differs from the English cell today is stale: `build` refuses it, and
tests/test_translations.py names the chapter and the cell. The header line under the title (the Colab link and
the sources, written by tools/colab_cell.py) is not translated by hand: it is left out of the English compared,
and written in Chinese here.
"""
from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import colab_cell  # noqa: E402

LANG = "zh-CN"
MARK = "%%% "
TODO = "(待译)"  # a block sync added: the cell has no translation yet


def english_notebooks(root: Path = ROOT) -> list[Path]:
    return sorted((root / "notebooks").glob("[0-9]*.ipynb"))


def translation_file(notebook: Path, root: Path = ROOT) -> Path:
    return root / "translations" / LANG / (notebook.stem + ".md")


def target(notebook: Path, root: Path = ROOT) -> Path:
    return root / "notebooks" / LANG / notebook.name


@dataclass
class Block:
    cell: str
    en: str
    zh: str


# --- the translation file ------------------------------------------------------------------------------------

def parse(text: str, name: str = "translation") -> dict[str, Block]:
    """Blocks by cell id. A malformed file is a ValueError naming its line."""
    blocks: dict[str, Block] = {}
    cell = part = None
    parts: dict[str, list[str]] = {}
    start = 0

    def close(line_no):
        if cell is None:
            return
        if set(parts) != {"en", "zh"}:
            raise ValueError(f"{name}, line {start}: cell {cell} needs an '%%% en' and an '%%% zh' part")
        if cell in blocks:
            raise ValueError(f"{name}, line {start}: cell {cell} appears twice")
        # Blank lines around a part are layout, not text (a cell's own trailing newlines are kept apart).
        blocks[cell] = Block(cell, "".join(parts["en"]).strip("\n"), "".join(parts["zh"]).strip("\n"))

    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if line.startswith(MARK):
            words = line[len(MARK):].split()
            if words[:1] == ["cell"] and len(words) == 2:
                close(number)
                cell, part, parts, start = words[1], None, {}, number
            elif words in (["en"], ["zh"]) and cell is not None and words[0] not in parts:
                part = words[0]
                parts[part] = []
            else:
                raise ValueError(f"{name}, line {number}: unexpected marker {line.strip()!r}")
        elif part is not None:
            parts[part].append(line)
        elif line.strip() and not line.startswith("<!--"):
            raise ValueError(f"{name}, line {number}: text outside a block")
    close(None)
    return blocks


def render(blocks: list[Block], title: str) -> str:
    head = (f"<!-- {title}: 中文译文。每个单元格一块：'%%% en' 下是译文依据的英文原文（请勿手改，"
            "用 tools/translate.py accept 更新），'%%% zh' 下是译文。 -->\n")
    out = [head]
    for block in blocks:
        for text in (block.en, block.zh):
            if any(line.startswith(MARK) for line in text.split("\n")):
                raise ValueError(f"cell {block.cell}: a line starts with {MARK!r}, which marks blocks")
        out.append(f"\n{MARK}cell {block.cell}\n{MARK}en\n{block.en}\n{MARK}zh\n{block.zh}\n")
    return "".join(out)


def read_blocks(notebook: Path, root: Path = ROOT) -> dict[str, Block]:
    path = translation_file(notebook, root)
    return parse(path.read_text(encoding="utf-8"), path.name) if path.exists() else {}


# --- the English side --------------------------------------------------------------------------------------

def markdown_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "markdown"]


def english_text(cell: dict, first: bool) -> str:
    """What a translation follows: the cell's source, without the generated header line in the first cell
    and without blank lines at its ends."""
    source = "".join(cell["source"]).strip("\n")
    if not first:
        return source
    lines = source.split("\n")
    at = next((i for i, line in enumerate(lines) if colab_cell.LINK_LINE.match(line)), None)
    if at is not None:
        start = at - 1 if at > 0 and not lines[at - 1].strip() else at
        del lines[start:at + 1]
    return "\n".join(lines).strip("\n")


def english_by_id(nb: dict) -> dict[str, str]:
    md = markdown_cells(nb)
    return {c["id"]: english_text(c, c is md[0]) for c in md}


# --- building a Chinese notebook ------------------------------------------------------------------------------

def header(url: str, english_name: str) -> str:
    note = (f"（暂不可用：课程的代码仓库仍是占位符 {colab_cell.PLACEHOLDER}；发布课程的人用 "
            "`python tools/colab_cell.py --repo owner/name` 设置它）") if colab_cell.PLACEHOLDER in url else ""
    return f"[在 Colab 中打开]({url}){note} · [课程的资料来源](SOURCES.md) · [English](../{english_name})"


def with_header(text: str, url: str, english_name: str) -> str:
    lines = text.split("\n")
    heading = next((i for i, line in enumerate(lines) if line.startswith("#")), None)
    at = 0 if heading is None else heading + 1
    lines[at:at] = (["", header(url, english_name)] if heading is not None else [header(url, english_name), ""])
    return "\n".join(lines)


def relinked(text: str) -> str:
    """Links out of notebooks/ go one folder further up from notebooks/zh-CN/."""
    return re.sub(r"\]\(\.\./", "](../../", text)


class Stale(Exception):
    """Some Markdown cells have no translation, or one made from other English."""

    def __init__(self, chapter: str, missing: list[str], stale: list[str]) -> None:
        self.chapter, self.missing, self.stale = chapter, missing, stale
        parts = []
        if missing:
            parts.append(f"no translation for cell(s) {', '.join(missing)}")
        if stale:
            parts.append(f"English changed since translated: cell(s) {', '.join(stale)}")
        super().__init__(f"{chapter}: " + "; ".join(parts) + " (python tools/translate.py status -v "
                         f"{chapter.split('_')[0]})")


def problems(nb: dict, blocks: dict[str, Block]) -> tuple[list[str], list[str]]:
    """The ids of cells with no translation, and of cells whose English changed since their translation."""
    missing, stale = [], []
    for cell_id, english in english_by_id(nb).items():
        block = blocks.get(cell_id)
        if block is None or block.zh.strip() in ("", TODO):
            missing.append(cell_id)
        elif block.en != english:
            stale.append(cell_id)
    return missing, stale


def build_notebook(notebook: Path, root: Path = ROOT) -> str:
    """The Chinese notebook's text; raises Stale when a Markdown cell has no current translation."""
    text = notebook.read_text(encoding="utf-8")
    nb = json.loads(text)
    blocks = read_blocks(notebook, root)
    missing, stale = problems(nb, blocks)
    if missing or stale:
        raise Stale(notebook.stem, missing, stale)
    md = markdown_cells(nb)
    repository = colab_cell.repository_in((root / "pyproject.toml").read_text(encoding="utf-8"))
    url = colab_cell.colab_url(repository, f"notebooks/{LANG}/{notebook.name}")
    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            zh = relinked(blocks[cell["id"]].zh)
            if cell is md[0]:
                zh = with_header(zh, url, notebook.name)
            cell = dict(cell, source=colab_cell.as_lines(zh))
        cells.append(cell)
    return colab_cell.dumps(dict(nb, cells=cells))


def translated_chapters(root: Path = ROOT) -> list[Path]:
    return [nb for nb in english_notebooks(root) if translation_file(nb, root).exists()]


# --- commands ----------------------------------------------------------------------------------------------

def find(chapter: str, root: Path = ROOT) -> Path:
    found = [nb for nb in english_notebooks(root) if nb.stem == chapter or nb.stem.split("_")[0] == chapter]
    if len(found) != 1:
        raise SystemExit(f"no chapter {chapter!r}: give its number (03b) or its file name without .ipynb")
    return found[0]


def cmd_build(args) -> int:
    out = args.root / "notebooks" / LANG
    out.mkdir(parents=True, exist_ok=True)
    failed, written = [], 0
    for notebook in translated_chapters(args.root):
        try:
            text = build_notebook(notebook, args.root)
        except Stale as e:
            failed.append(str(e))
            continue
        path = target(notebook, args.root)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8", newline="\n")
            written += 1
    print(f"{written} Chinese notebook(s) written in {out.relative_to(args.root)}")
    for line in failed:
        print("not built:", line)
    return 1 if failed else 0


def cmd_status(args) -> int:
    chapters = [find(args.chapter, args.root)] if args.chapter else english_notebooks(args.root)
    bad = 0
    for notebook in chapters:
        nb = json.loads(notebook.read_text(encoding="utf-8"))
        if not translation_file(notebook, args.root).exists():
            print(f"{notebook.stem}: not translated yet")
            bad += 1
            continue
        blocks = read_blocks(notebook, args.root)
        missing, stale = problems(nb, blocks)
        total = len(markdown_cells(nb))
        print(f"{notebook.stem}: {total - len(missing) - len(stale)} of {total} cells current"
              + (f"; missing {', '.join(missing)}" if missing else "") + (f"; stale {', '.join(stale)}" if stale else ""))
        bad += bool(missing or stale)
        if args.verbose:
            english = english_by_id(nb)
            for cell_id in stale:
                print(f"\n--- cell {cell_id}: the English it was translated from -> the English now")
                sys.stdout.writelines(difflib.unified_diff(blocks[cell_id].en.splitlines(keepends=True),
                                                           english[cell_id].splitlines(keepends=True), n=1))
                print()
    return 1 if bad else 0


def cmd_sync(args) -> int:
    notebook = find(args.chapter, args.root)
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    blocks = read_blocks(notebook, args.root)
    english = english_by_id(nb)
    kept = [blocks.get(cell_id) or Block(cell_id, text, TODO) for cell_id, text in english.items()]
    gone = sorted(set(blocks) - set(english))
    path = translation_file(notebook, args.root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(kept, notebook.stem), encoding="utf-8", newline="\n")
    added = sum(1 for cell_id in english if cell_id not in blocks)
    print(f"{path.relative_to(args.root)}: {added} block(s) added for new cells, {len(gone)} dropped"
          + (f" ({', '.join(gone)})" if gone else ""))
    return 0


def cmd_accept(args) -> int:
    notebook = find(args.chapter, args.root)
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    blocks = read_blocks(notebook, args.root)
    english = english_by_id(nb)
    for cell_id in args.cells:
        if cell_id not in blocks or cell_id not in english:
            raise SystemExit(f"{notebook.stem} has no translated cell {cell_id!r}")
        blocks[cell_id].en = english[cell_id]
    path = translation_file(notebook, args.root)
    path.write_text(render([blocks[c] for c in english if c in blocks], notebook.stem), encoding="utf-8", newline="\n")
    print(f"{path.relative_to(args.root)}: {len(args.cells)} cell(s) now follow today's English")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the course folder (a copy, in tests)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build").set_defaults(run=cmd_build)
    status = sub.add_parser("status")
    status.add_argument("chapter", nargs="?")
    status.add_argument("-v", "--verbose", action="store_true")
    status.set_defaults(run=cmd_status)
    sync = sub.add_parser("sync")
    sync.add_argument("chapter")
    sync.set_defaults(run=cmd_sync)
    accept = sub.add_parser("accept")
    accept.add_argument("chapter")
    accept.add_argument("cells", nargs="+")
    accept.set_defaults(run=cmd_accept)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
