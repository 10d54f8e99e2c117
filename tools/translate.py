"""The Chinese edition, built from the English notebooks: the same code and outputs, translated prose.

    python tools/translate.py build            # write notebooks/zh-CN/*.ipynb, README.zh-CN.md, zh-CN/SOURCES.md
    python tools/translate.py status [NN]      # which cells have no translation, or one made from older English
    python tools/translate.py status -v NN     # ... with what changed in the English since it was translated
    python tools/translate.py sync NN          # add blocks for new cells to NN's translation file, drop gone ones
    python tools/translate.py accept NN ID...  # after updating a translation: record the English it now follows
    (NN: a chapter's number, 03b, or a page: README, SOURCES)

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

The two pages a learner reads beside the notebooks, README.md and notebooks/SOURCES.md, are translated the same way
paragraph by paragraph (translations/zh-CN/pages/), a paragraph's block keyed by a hash of the English it follows.
"""
from __future__ import annotations

import argparse
import difflib
import hashlib
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


CJK = "\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef"
STRUCTURE = re.compile(r"\s*(#|\||[-*+]\s|\d+[.)]\s|```|<)")


def joined(text: str) -> str:
    """Lines of one paragraph wrapped between two Chinese characters joined again: Markdown renders such a line
    break as a space, which Chinese does not put between words. Code, tables, lists' new items and headings stay."""
    out: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        quote = out and out[-1].startswith(">") and line.startswith(">")
        body = line[1:].lstrip() if quote else line.lstrip()
        if (out and not fenced and out[-1] and re.search(f"[{CJK}]$", out[-1]) and re.match(f"[{CJK}]", body)
                and (quote or not line.startswith(">")) and not STRUCTURE.match(line)
                and not out[-1].lstrip().startswith(("#", "|", "```"))):
            out[-1] += body
        else:
            out.append(line)
    return "\n".join(out)


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
    return diff(english_by_id(nb), blocks)


def build_notebook(notebook: Path, root: Path = ROOT) -> str:
    """The Chinese notebook's text; raises Stale when a Markdown cell has no current translation."""
    return Chapter(notebook, root).build()


def translated_chapters(root: Path = ROOT) -> list[Path]:
    return [nb for nb in english_notebooks(root) if translation_file(nb, root).exists()]


# --- what is translated: a chapter (its Markdown cells) or a page (its paragraphs) ---------------------------

class Chapter:
    def __init__(self, notebook: Path, root: Path = ROOT) -> None:
        self.english_path, self.root, self.name = notebook, root, notebook.stem
        self.translation = translation_file(notebook, root)
        self.target = target(notebook, root)

    def english(self) -> dict[str, str]:
        return english_by_id(json.loads(self.english_path.read_text(encoding="utf-8")))

    def blocks(self) -> dict[str, Block]:
        return parse(self.translation.read_text(encoding="utf-8"), self.translation.name) if self.translation.exists() else {}

    def check(self) -> dict[str, Block]:
        blocks = self.blocks()
        missing, stale = diff(self.english(), blocks)
        if missing or stale:
            raise Stale(self.name, missing, stale)
        return blocks

    def build(self) -> str:
        blocks = self.check()
        nb = json.loads(self.english_path.read_text(encoding="utf-8"))
        md = markdown_cells(nb)
        repository = colab_cell.repository_in((self.root / "pyproject.toml").read_text(encoding="utf-8"))
        url = colab_cell.colab_url(repository, f"notebooks/{LANG}/{self.english_path.name}")
        cells = []
        for cell in nb["cells"]:
            if cell["cell_type"] == "markdown":
                zh = relinked(joined(blocks[cell["id"]].zh))
                if cell is md[0]:
                    zh = with_header(zh, url, self.english_path.name)
                cell = dict(cell, source=colab_cell.as_lines(zh))
            cells.append(cell)
        return colab_cell.dumps(dict(nb, cells=cells))


def paragraphs(text: str) -> list[str]:
    """A Markdown page cut at blank lines, a fenced block kept whole."""
    out, current, fenced = [], [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        if not line.strip() and not fenced:
            if current:
                out.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        out.append("\n".join(current))
    return out


def paragraph_id(text: str) -> str:
    return "p" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]


class Page(Chapter):
    """A Markdown page whose paragraphs are the blocks; a block's id is the hash of the English it first followed."""

    def __init__(self, name: str, english: str, chinese: str, root: Path = ROOT) -> None:
        self.english_path, self.root, self.name = root / english, root, name
        self.translation = root / "translations" / LANG / "pages" / (name + ".md")
        self.target = root / chinese

    def english(self) -> dict[str, str]:
        return {paragraph_id(p): p for p in paragraphs(self.english_path.read_text(encoding="utf-8"))}

    def build(self) -> str:
        blocks = self.check()
        return self.relink("\n\n".join(joined(blocks[i].zh) for i in self.english()) + "\n")

    def relink(self, text: str) -> str:
        if self.name == "SOURCES":  # notebooks/zh-CN/ is one folder further down than notebooks/
            return relinked(text)
        # The README's links into the course lead to the Chinese chapters and sources page; its language switch back.
        text = re.sub(r"\]\(README\.zh-CN\.md\)", "](README.md)", text)
        text = re.sub(r"(\]\(|/blob/[^/]+/)notebooks/([0-9][^/)]*\.ipynb|SOURCES\.md)", rf"\1notebooks/{LANG}/\2", text)
        return text


def pages(root: Path = ROOT) -> list[Page]:
    return [Page("README", "README.md", "README.zh-CN.md", root),
            Page("SOURCES", "notebooks/SOURCES.md", f"notebooks/{LANG}/SOURCES.md", root)]


def units(root: Path = ROOT) -> list[Chapter]:
    return [Chapter(nb, root) for nb in english_notebooks(root)] + pages(root)


def diff(english: dict[str, str], blocks: dict[str, Block]) -> tuple[list[str], list[str]]:
    """The ids with no translation, and those whose English changed since their translation."""
    missing = [i for i in english if i not in blocks or blocks[i].zh.strip() in ("", TODO)]
    stale = [i for i in english if i not in missing and blocks[i].en != english[i]]
    return missing, stale


# --- commands ----------------------------------------------------------------------------------------------

def find(name: str, root: Path = ROOT):
    """A chapter by its number (03b) or file name, or a page by its name (README, SOURCES)."""
    found = [u for u in units(root) if u.name == name or u.name.split("_")[0] == name]
    if len(found) != 1:
        raise SystemExit(f"no chapter or page {name!r}: give a chapter's number (03b), its file name without "
                         ".ipynb, README or SOURCES")
    return found[0]


def cmd_build(args) -> int:
    failed, written = [], 0
    for unit in units(args.root):
        if not unit.translation.exists():
            continue
        try:
            text = unit.build()
        except Stale as e:
            failed.append(str(e))
            continue
        if not unit.target.exists() or unit.target.read_text(encoding="utf-8") != text:
            unit.target.parent.mkdir(parents=True, exist_ok=True)
            unit.target.write_text(text, encoding="utf-8", newline="\n")
            written += 1
    print(f"{written} Chinese file(s) written")
    for line in failed:
        print("not built:", line)
    return 1 if failed else 0


def cmd_status(args) -> int:
    bad = 0
    for unit in [find(args.chapter, args.root)] if args.chapter else units(args.root):
        if not unit.translation.exists():
            print(f"{unit.name}: not translated yet")
            bad += 1
            continue
        english, blocks = unit.english(), unit.blocks()
        missing, stale = diff(english, blocks)
        print(f"{unit.name}: {len(english) - len(missing) - len(stale)} of {len(english)} blocks current"
              + (f"; missing {', '.join(missing)}" if missing else "") + (f"; stale {', '.join(stale)}" if stale else ""))
        bad += bool(missing or stale)
        if args.verbose:
            for block_id in stale:
                print(f"\n--- {block_id}: the English it was translated from -> the English now")
                sys.stdout.writelines(difflib.unified_diff(blocks[block_id].en.splitlines(keepends=True),
                                                           english[block_id].splitlines(keepends=True), n=1))
                print()
            for block_id in missing:
                print(f"\n--- {block_id}: no translation yet\n{english[block_id]}")
    return 1 if bad else 0


def cmd_sync(args) -> int:
    """Blocks for new cells or paragraphs (a changed paragraph keeps the translation of the one it most resembles,
    marked stale until accepted), and none for what is gone."""
    unit = find(args.chapter, args.root)
    blocks, english = unit.blocks(), unit.english()
    unused = [b for i, b in blocks.items() if i not in english]
    kept = []
    for block_id, text in english.items():
        block = blocks.get(block_id)
        if block is None and isinstance(unit, Page) and unused:
            best = max(unused, key=lambda b: difflib.SequenceMatcher(None, b.en, text).ratio())
            if difflib.SequenceMatcher(None, best.en, text).ratio() >= 0.6:
                unused.remove(best)
                block = Block(block_id, best.en, best.zh)
        kept.append(block or Block(block_id, text, TODO))
    added = sum(1 for b in kept if b.zh == TODO)
    unit.translation.parent.mkdir(parents=True, exist_ok=True)
    unit.translation.write_text(render(kept, unit.name), encoding="utf-8", newline="\n")
    print(f"{unit.translation.relative_to(args.root)}: {added} block(s) to translate, "
          f"{len(set(blocks) - {b.cell for b in kept})} dropped")
    return 0


def cmd_accept(args) -> int:
    unit = find(args.chapter, args.root)
    blocks, english = unit.blocks(), unit.english()
    for block_id in args.cells:
        if block_id not in blocks or block_id not in english:
            raise SystemExit(f"{unit.name} has no translated block {block_id!r}")
        blocks[block_id].en = english[block_id]
    unit.translation.write_text(render([blocks[i] for i in english if i in blocks], unit.name), encoding="utf-8",
                                newline="\n")
    print(f"{unit.translation.relative_to(args.root)}: {len(args.cells)} block(s) now follow today's English")
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
