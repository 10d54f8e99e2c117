"""The Chinese edition can never silently fall behind the English: same code and outputs, current prose.

The Chinese notebooks (notebooks/zh-CN/) are built by tools/translate.py from the English notebooks and the
translation files (translations/zh-CN/); they are not executed again. These tests prove that what is on disk is
what the tool builds, that every code cell and output is the English one, that every Markdown cell has a
translation made from today's English, and that each translation keeps the English cell's numbers, code, links
and headings.
"""
import json
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import translate  # noqa: E402

# Chapters whose Chinese edition is still being written. The list may only shrink: a chapter leaves it with a
# translation file whose every cell is current.
NOT_YET_TRANSLATED: set[str] = set()

ENGLISH = translate.english_notebooks()
TRANSLATED = [nb for nb in ENGLISH if translate.translation_file(nb).exists()]
PAGES = [page for page in translate.pages() if page.translation.exists()]  # README.md, notebooks/SOURCES.md


def test_every_chapter_and_page_is_translated_or_listed_as_not_yet():
    stems = {unit.name for unit in translate.units()}
    done = {nb.stem for nb in TRANSLATED} | {page.name for page in PAGES}
    assert NOT_YET_TRANSLATED <= stems, f"listed but not a chapter or page: {sorted(NOT_YET_TRANSLATED - stems)}"
    listed_yet_translated = done & NOT_YET_TRANSLATED
    assert not listed_yet_translated, f"translated now: take {sorted(listed_yet_translated)} off NOT_YET_TRANSLATED"
    untranslated = stems - done - NOT_YET_TRANSLATED
    assert not untranslated, f"no Chinese edition: {sorted(untranslated)} (python tools/translate.py sync NN)"


def test_no_chinese_notebook_without_its_english_one():
    built = {p.name for p in (ROOT / "notebooks" / translate.LANG).glob("*.ipynb")}
    assert built <= {nb.name for nb in TRANSLATED}, f"left over: {sorted(built - {nb.name for nb in TRANSLATED})}"


@pytest.mark.parametrize("notebook", TRANSLATED, ids=lambda p: p.stem)
def test_the_chinese_notebook_is_what_the_tool_builds_from_current_translations(notebook):
    try:
        built = translate.build_notebook(notebook)
    except translate.Stale as stale:
        pytest.fail(str(stale))
    on_disk = translate.target(notebook)
    assert on_disk.exists(), f"{on_disk.name}: not built (python tools/translate.py build)"
    assert on_disk.read_text(encoding="utf-8") == built, (
        f"{on_disk.relative_to(ROOT)} differs from what tools/translate.py builds: run python tools/translate.py build")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_chinese_page_is_what_the_tool_builds_from_current_translations(page):
    try:
        built = page.build()
    except translate.Stale as stale:
        pytest.fail(str(stale))
    assert page.target.exists() and page.target.read_text(encoding="utf-8") == built, (
        f"{page.target.relative_to(ROOT)} differs from what tools/translate.py builds: run python tools/translate.py build")


@pytest.mark.parametrize("notebook", TRANSLATED, ids=lambda p: p.stem)
def test_code_cells_outputs_and_metadata_are_the_english_ones_byte_for_byte(notebook):
    english = json.loads(notebook.read_text(encoding="utf-8"))
    path = translate.target(notebook)
    if not path.exists():
        pytest.fail(f"{path.name}: not built")
    chinese = json.loads(path.read_text(encoding="utf-8"))
    assert chinese["metadata"] == english["metadata"]
    assert [c["id"] for c in chinese["cells"]] == [c["id"] for c in english["cells"]]
    for en, zh in zip(english["cells"], chinese["cells"]):
        if en["cell_type"] == "markdown":
            assert zh["cell_type"] == "markdown" and zh["metadata"] == en["metadata"]
        else:
            assert json.dumps(zh, sort_keys=True) == json.dumps(en, sort_keys=True), f"cell {en['id']} differs"


@pytest.mark.parametrize("notebook", TRANSLATED, ids=lambda p: p.stem)
def test_the_translation_file_has_no_block_for_a_cell_that_is_gone(notebook):
    english = translate.english_by_id(json.loads(notebook.read_text(encoding="utf-8")))
    gone = sorted(set(translate.read_blocks(notebook)) - set(english))
    assert not gone, f"{notebook.stem}: blocks for cells no longer in the English: {gone} (tools/translate.py sync)"


# --- what a translation must keep -------------------------------------------------------------------------

FENCE = re.compile(r"^```.*?^```", re.M | re.S)
INLINE = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")
# ASCII word characters only: a digit written against Chinese ("用了3次") is still a number.
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])\d+(?:[.,]\d+)*(?![A-Za-z0-9_])")


def _prose(text: str) -> str:
    """The text without code and link targets: what numbers are read from."""
    text = FENCE.sub(" ", text)
    text = INLINE.sub(" ", text)
    text = re.sub(r"<a id=\"[^\"]*\"></a>", " ", text)
    return LINK.sub("]", text)


def kept(text: str) -> dict:
    prose = _prose(text)
    return {
        "code blocks": FENCE.findall(text),
        "inline code": sorted(set(m.group(2) for m in INLINE.finditer(FENCE.sub(" ", text)))),
        "links": sorted(set(LINK.findall(text))),
        "numbers": sorted(set(n.replace(",", "").rstrip(".") for n in NUMBER.findall(prose))),
        "anchors": sorted(re.findall(r'<a id="([^"]+)"></a>', text)),
        "headings": Counter(len(m.group(1)) for m in re.finditer(r"^(#+)\s", FENCE.sub(" ", text), re.M)),
    }


UNITS = [translate.Chapter(nb) for nb in TRANSLATED] + PAGES
BLOCKS = [(unit.name, block) for unit in UNITS for block in unit.blocks().values()
          if block.zh.strip() not in ("", translate.TODO)]


@pytest.mark.parametrize("name,block", BLOCKS, ids=lambda x: x if isinstance(x, str) else x.cell)
def test_a_translation_keeps_the_numbers_code_links_and_headings_of_its_english(name, block):
    english, chinese = kept(block.en), kept(block.zh)
    for what in english:
        assert chinese[what] == english[what], (
            f"{name}, block {block.cell}: the {what} differ\n  English: {english[what]}\n  Chinese: {chinese[what]}")


def glossary() -> list[tuple[str, str, list[str]]]:
    rows = []
    for line in (ROOT / "translations" / translate.LANG / "GLOSSARY.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3 and cells[0] not in ("English", "---"):
            rows.append((cells[0], cells[1], [w.strip() for w in cells[2].split(",") if w.strip()]))
    return rows


def test_the_glossary_is_read():
    rows = glossary()
    assert len(rows) >= 40 and ("agent", "智能体", ["代理"]) in rows


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_translations_use_the_glossarys_terms_not_the_ones_it_rejects(unit):
    notebook = unit
    for block in unit.blocks().values():
        prose = FENCE.sub(" ", INLINE.sub(" ", block.zh))
        terms = glossary()
        for _, chinese, _ in terms:  # a rejected word inside a chosen term (单元 in 单元格) is the chosen term
            prose = prose.replace(chinese, " ")
        for english, chinese, rejected in terms:
            for word in rejected:
                assert word not in prose, (f"{notebook.name}, block {block.cell}: '{word}' for '{english}': the "
                                           f"glossary (translations/zh-CN/GLOSSARY.md) says '{chinese}'")


# --- the check itself fails where it must ----------------------------------------------------------------

def _copy_course(tmp_path: Path, notebook: Path) -> Path:
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    shutil.copy(notebook, root / "notebooks" / notebook.name)
    (root / "translations" / translate.LANG).mkdir(parents=True)
    shutil.copy(translate.translation_file(notebook), translate.translation_file(notebook, root))
    return root


@pytest.mark.skipif(not TRANSLATED, reason="no chapter translated yet")
def test_changing_one_english_markdown_cell_makes_the_build_fail_naming_that_cell(tmp_path):
    notebook = TRANSLATED[0]
    root = _copy_course(tmp_path, notebook)
    copy = root / "notebooks" / notebook.name
    nb = json.loads(copy.read_text(encoding="utf-8"))
    markdown = [c for c in nb["cells"] if c["cell_type"] == "markdown"]
    victim = markdown[len(markdown) // 2]
    victim["source"] = victim["source"] + [" One more English sentence."]
    copy.write_text(json.dumps(nb), encoding="utf-8")
    with pytest.raises(translate.Stale) as stale:
        translate.build_notebook(copy, root)
    assert stale.value.stale == [victim["id"]] and victim["id"] in str(stale.value)
    assert notebook.stem in str(stale.value)


@pytest.mark.skipif(not TRANSLATED, reason="no chapter translated yet")
def test_a_new_english_cell_without_translation_is_named(tmp_path):
    notebook = TRANSLATED[0]
    root = _copy_course(tmp_path, notebook)
    copy = root / "notebooks" / notebook.name
    nb = json.loads(copy.read_text(encoding="utf-8"))
    nb["cells"].append({"cell_type": "markdown", "id": "brand-new", "metadata": {}, "source": ["New text."]})
    copy.write_text(json.dumps(nb), encoding="utf-8")
    with pytest.raises(translate.Stale) as stale:
        translate.build_notebook(copy, root)
    assert stale.value.missing == ["brand-new"]


def test_the_translation_file_round_trips_and_refuses_what_it_cannot_hold():
    blocks = [translate.Block("a1", "# Title\n\nText with `code`.", "# 标题\n\n带 `code` 的文字。"),
              translate.Block("b2", "", "")]
    assert list(translate.parse(translate.render(blocks, "t")).values()) == blocks
    with pytest.raises(ValueError, match="marks blocks"):
        translate.render([translate.Block("c3", "%%% cell x", "y")], "t")
    with pytest.raises(ValueError, match="line 2"):
        translate.parse("%%% cell a\n%%% fr\n")
    with pytest.raises(ValueError, match="needs an"):
        translate.parse("%%% cell a\n%%% en\nx\n")


def test_what_a_translation_keeps_is_read_from_numbers_code_links_and_headings():
    english = "## 2. Cost\n\nIt took 1,200 tokens in `run(3)`, see [there](SOURCES.md#a).\n\n```python\nx = 1\n```"
    good = "## 2. 成本\n\n`run(3)` 用了 1200 个 token，见[那里](SOURCES.md#a)。\n\n```python\nx = 1\n```"
    assert kept(good) == kept(english)
    for bad in (good.replace("1200", "1300"), good.replace("`run(3)`", "`run(4)`"), good.replace("#a", "#b"),
                good.replace("## 2.", "### 2."), good.replace("x = 1", "x = 2"), good + " 共 7 次。", good + "共7次"):
        assert kept(bad) != kept(english), bad


def test_a_page_is_translated_by_paragraph_and_a_changed_paragraph_is_named(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "README.md").write_text("# Title\n\nFirst paragraph.\n\n```bash\nmake lab\n\nmake test\n```\n", encoding="utf-8")
    page = translate.Page("README", "README.md", "README.zh-CN.md", tmp_path)
    english = page.english()
    assert list(english.values()) == ["# Title", "First paragraph.", "```bash\nmake lab\n\nmake test\n```"]
    zh = dict(zip(english, ["# 标题", "第一段。", "```bash\nmake lab\n\nmake test\n```"]))
    page.translation.parent.mkdir(parents=True)
    page.translation.write_text(translate.render([translate.Block(i, english[i], zh[i]) for i in english], "README"),
                                encoding="utf-8")
    assert page.build() == "# 标题\n\n第一段。\n\n```bash\nmake lab\n\nmake test\n```\n"
    (tmp_path / "README.md").write_text("# Title\n\nFirst paragraph, changed.\n\n```bash\nmake lab\n\nmake test\n```\n",
                                        encoding="utf-8")
    with pytest.raises(translate.Stale) as stale:
        page.build()
    assert stale.value.missing == [translate.paragraph_id("First paragraph, changed.")]
    # sync keeps the old translation beside the English it followed, so status shows what changed
    assert translate.main(["--root", str(tmp_path), "sync", "README"]) == 0
    with pytest.raises(translate.Stale) as stale:
        page.build()
    assert stale.value.stale == [translate.paragraph_id("First paragraph, changed.")]


@pytest.mark.parametrize("notebook", ENGLISH, ids=lambda p: p.stem)
def test_an_english_chapter_links_its_chinese_edition_exactly_when_there_is_one(notebook):
    first = "".join(json.loads(notebook.read_text(encoding="utf-8"))["cells"][0]["source"])
    linked = f"](zh-CN/{notebook.name})" in first
    assert linked == translate.target(notebook).exists(), (
        f"{notebook.name}: the header's link to the Chinese edition is out of step (python tools/colab_cell.py)")
