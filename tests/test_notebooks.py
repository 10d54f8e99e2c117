"""Conventions every chapter follows, so a learner's JupyterLab and nbval see the same notebook."""
import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9]*.ipynb"))
# What JupyterLab writes for the venv's kernel: anything else marks a fresh notebook as modified.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
NBVAL_TAGS = {"nbval-ignore-output", "nbval-skip", "nbval-raises-exception", "raises-exception"}


def cells(path, kind="code"):
    return [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == kind]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_stored_kernelspec_is_the_one_jupyterlab_writes(path):
    assert json.loads(path.read_text(encoding="utf-8"))["metadata"]["kernelspec"] == KERNELSPEC


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_test_directives_are_tags_not_comments_in_the_learners_code(path):
    for cell in cells(path):
        source = "".join(cell["source"])
        assert not re.search(r"#\s*(NBVAL|PYTEST_VALIDATE)_", source), source[:120]
        unknown = {t for t in cell.get("metadata", {}).get("tags", []) if t.startswith("nbval")} - NBVAL_TAGS
        assert not unknown, f"unknown nbval tags {unknown}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_code_cell_is_saved_executed_without_errors(path):
    for cell in cells(path):
        # tools/colab_cell.py's install cell is stored unexecuted: it does nothing where agentkit is installed.
        if "".join(cell["source"]).strip() and "colab-install" not in cell.get("metadata", {}).get("tags", []):
            assert cell["execution_count"] is not None, "".join(cell["source"])[:120]
            assert all(o["output_type"] != "error" for o in cell["outputs"]) or "raises-exception" in cell.get(
                "metadata", {}).get("tags", [])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_panels_are_saved_as_their_placeholder_and_checked(path):
    from agentkit.widgets import PLACEHOLDER

    for cell in cells(path):
        if re.search(r"\w+_panel\(\)\s*$", "".join(cell["source"])):
            plain = ["".join(o["data"].get("text/plain", "")) for o in cell["outputs"] if "data" in o]
            assert plain == [PLACEHOLDER]
            assert "nbval-ignore-output" not in cell.get("metadata", {}).get("tags", [])


# --- sources a learner can find ----------------------------------------------------------------

SOURCES_PAGE = NOTEBOOKS[0].parent / "SOURCES.md"


def source_anchors() -> set:
    return set(re.findall(r'<a id="([a-z0-9-]+)"></a>', SOURCES_PAGE.read_text(encoding="utf-8")))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_chapter_links_to_the_sources_page_and_every_source_line_to_its_entry(path):
    first = "".join(cells(path, "markdown")[0]["source"])
    assert "](SOURCES.md)" in first, "the header line (tools/colab_cell.py) links to the sources page"
    anchors = source_anchors()
    for cell in cells(path, "markdown"):
        lines = "".join(cell["source"]).split("\n")
        for i, line in enumerate(lines):
            if re.match(r">?\s*Source:", line.strip()):
                # The citation runs on over the quote's next lines, up to a blank line or the quote's end.
                rest = lines[i + 1:i + 4]
                cited = " ".join([line] + rest[:next((k for k, l in enumerate(rest) if not l.startswith(">")
                                                      or not l.strip(">").strip()), len(rest))])
                linked = re.findall(r"\]\(SOURCES\.md#([a-z0-9-]+)\)", cited)
                assert linked and set(linked) <= anchors, f"{path.name}: {line!r} names no entry of SOURCES.md"


# --- every number in the prose is printed by a cell, or cited -------------------------------
#
# What counts as a quoted number: an integer of two or more digits (25185, 1,500, 20) or any
# number with a decimal point or an exponent (0.25, 3.3, 1e100). Single-digit integers are left
# to the reader: in prose they are ordinals and small counts ("step 2", "section 3", "three or 4
# tries", "notebook 04"), and they would match some output by chance anyway, so checking them
# would teach writers to ignore the check. Numbers glued to letters (o200k, SmolLM2-135M,
# GPT-4, x86) are names, not figures. Ignored: inline code and fenced code blocks (code is code,
# not a claim), link targets, bare URLs and HTML tags. Cited: every number in a blockquote (lines starting
# with `>`) that names its source with `Source:`, in the same cell. A learner has the notebook, not the
# course's fact sheet, so a blockquote whose source is the fact sheet (or COURSE.md) cites nothing, and
# naming it at all is an offence of its own. Everything else must appear, as a number of the same value,
# among the notebook's code or stored outputs.

_FENCED = re.compile(r"^\s*(```|~~~).*?^\s*\1", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1", re.DOTALL)
_LINKS = re.compile(r"\]\([^)]*\)|https?://\S+|<[^>\n]+>")  # link targets, URLs, HTML tags
_DIGITS = r"\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][+-]?\d+)?"  # 25185, 12,717, 3.3, 1e100
_PROSE_NUMBER = re.compile(r"(?<![\w.])" + _DIGITS + r"(?!\w|\.\d)")  # not a name (o200k, GPT-4o), not 127.0.0.1
_SHOWN_NUMBER = re.compile(_DIGITS)  # outputs may glue numbers to anything: x3.3, 1090ms
_FACT_SHEET = re.compile(r"fact sheet|COURSE\.md", re.IGNORECASE)


def _value(token):
    from decimal import Decimal, InvalidOperation

    try:
        return Decimal(token.replace(",", ""))
    except InvalidOperation:  # pragma: no cover - the regex only yields numbers
        return None


def _quoted(token):
    """A figure worth checking: two or more digits, or a decimal point or exponent."""
    plain = token.replace(",", "")
    return bool(re.search(r"[.eE]", plain)) or len(plain.lstrip("0")) >= 2


def _uncited_prose(markdown):
    """The prose of a Markdown cell without code, links, or cited blockquotes."""
    text = _LINKS.sub(" ", _INLINE_CODE.sub(" ", _FENCED.sub(" ", markdown)))
    kept, block = [], []
    for line in text.splitlines() + [""]:
        if line.lstrip().startswith(">"):
            block.append(line)
            continue
        if block and not any("Source:" in quoted and not _FACT_SHEET.search(quoted) for quoted in block):
            kept.extend(block)  # a blockquote that names no source (or only the fact sheet) is ordinary prose
        block = []
        kept.append(line)
    return "\n".join(kept)


def _shown(notebook):
    """Everything the notebook's cells show: their code and their stored outputs."""
    parts = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        parts.append("".join(cell["source"]))
        for output in cell.get("outputs", []):
            parts.append("".join(output.get("text", "")))
            parts += ["".join(v) for k, v in output.get("data", {}).items() if k.startswith("text/")]
            parts += [output.get("evalue", "")]
    return "\n".join(parts)


def unshown_numbers_by_cell(notebook):
    """{cell number: numbers its prose quotes that no cell of the notebook prints and no source is cited for}."""
    shown = {_value(t) for t in _SHOWN_NUMBER.findall(_shown(notebook))}
    missing = {}
    for number, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "markdown":
            for token in _PROSE_NUMBER.findall(_uncited_prose("".join(cell["source"]))):
                if _quoted(token) and _value(token) not in shown and token not in missing.get(number, []):
                    missing.setdefault(number, []).append(token)
    return missing


def unshown_numbers(notebook):
    """Numbers quoted in the notebook's prose that no cell prints and no source is cited for."""
    return list(dict.fromkeys(t for tokens in unshown_numbers_by_cell(notebook).values() for t in tokens))


# --- lessons, not test fixtures --------------------------------------------------------------
#
# What a learner reads (Markdown and what cells print) speaks of the course, not of how it is
# tested or built: instructors' matters belong in CONTRIBUTING.md. A pointer to a test file as further
# reading is fine; these phrases are not.
_TEST_VOCABULARY = re.compile(
    r"\bnbval\b|\bpytest\b|\bmake test\b|this output is checked|not compared when the course is tested"
    r"|the test command|docstring is the contract|agentkit/scripts/|load average|set out to reach",
    re.IGNORECASE,
)


def _learner_text(cell):
    """What a learner reads of a cell: a Markdown cell's text, or what a code cell printed."""
    if cell["cell_type"] == "markdown":
        return "".join(cell["source"])
    return "\n".join("".join(o.get("text", "")) + "".join("".join(v) for k, v in o.get("data", {}).items()
                      if k == "text/plain") for o in cell.get("outputs", []))


def offences(notebook):
    """{cell id: what its learner-facing text does wrong}: unshown numbers, a fact-sheet citation, test vocabulary."""
    found = {}
    for number, tokens in unshown_numbers_by_cell(notebook).items():
        found.setdefault(notebook["cells"][number]["id"], set()).update(tokens)
    for cell in notebook["cells"]:
        text = _learner_text(cell)
        if _FACT_SHEET.search(text):
            found.setdefault(cell["id"], set()).add("fact sheet")
        found.setdefault(cell["id"], set()).update(m.lower() for m in _TEST_VOCABULARY.findall(text))
        if cell["cell_type"] == "code":  # its comments are read too (the tags tell the tests what to compare)
            found[cell["id"]].update(m.lower() for m in _TEST_VOCABULARY.findall("".join(cell["source"])))
    return {cell: sorted(what) for cell, what in found.items() if what}


# Notebooks not yet brought up to these rules (the review of 2026-12-02; their fixes are under way),
# one entry per offending cell: {notebook: {cell id: [its offences]}}, with the cell's number as a
# comment. Nothing may be added here: a new offence fails. An entry that is fixed fails too, until it
# is deleted, so this list only shrinks.
NOT_YET_FIXED = {}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_number_in_the_prose_is_printed_by_a_cell_or_cited(path):
    found = offences(json.loads(path.read_text(encoding="utf-8")))
    allowed = NOT_YET_FIXED.get(path.name, {})
    new = {cell: [o for o in what if o not in allowed.get(cell, [])] for cell, what in found.items()}
    new = {cell: what for cell, what in new.items() if what}
    assert not new, (
        f"{path.name}, by cell id: {new}. A number must be printed by a cell, or cited on a blockquote line "
        "that names its source (> ... Source: ...), never the fact sheet (learners do not have it: name the "
        "source itself); test and build words belong in CONTRIBUTING.md, not in a lesson."
    )


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name in NOT_YET_FIXED], ids=lambda p: p.name)
def test_the_list_of_notebooks_not_yet_fixed_only_shrinks(path):
    found = offences(json.loads(path.read_text(encoding="utf-8")))
    fixed = {cell: [o for o in what if o not in found.get(cell, [])] for cell, what in NOT_YET_FIXED[path.name].items()}
    fixed = {cell: what for cell, what in fixed.items() if what}
    assert not fixed, f"{path.name}: fixed, so delete from NOT_YET_FIXED: {fixed}"


def test_the_list_of_notebooks_not_yet_fixed_names_real_notebooks():
    assert set(NOT_YET_FIXED) <= {p.name for p in NOTEBOOKS}


def _fake_notebook(markdown, output="", code="x = 1"):
    stream = [{"output_type": "stream", "name": "stdout", "text": output}] if output else []
    return {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": markdown},
        {"cell_type": "code", "metadata": {}, "source": code, "outputs": stream, "execution_count": 1},
    ]}


def test_the_prose_number_check_catches_a_planted_wrong_number():
    printed = "after 20 steps: 12717 prompt tokens (x3.3)\n"
    assert unshown_numbers(_fake_notebook("20 steps cost 12,717 tokens, 3.3 times as many.", printed)) == []
    assert unshown_numbers(_fake_notebook("20 steps cost 12,718 tokens.", printed)) == ["12,718"]
    assert unshown_numbers(_fake_notebook("It grew 3.4 times.", printed)) == ["3.4"]
    assert unshown_numbers(_fake_notebook("25 steps.", printed + "25185")) == ["25"]  # whole numbers, not digits


def test_a_fact_sheet_citation_cites_nothing_and_is_an_offence_of_its_own():
    cited = "> ReAct takes 3-8 s per small task.\n> Source: a practitioner's overview.\n"
    fact_sheet = "> ReAct takes 3-8 s per small task, about 8,000 tokens.\n> Source: the course's fact sheet (COURSE.md).\n"
    assert unshown_numbers(_fake_notebook(cited.replace("task.", "task, about 8,000 tokens."))) == []
    assert unshown_numbers(_fake_notebook(fact_sheet)) == ["8,000"]
    notebook = _fake_notebook(fact_sheet)
    notebook["cells"][0]["id"] = "c0"
    notebook["cells"][1]["id"] = "c1"
    assert offences(notebook) == {"c0": ["8,000", "fact sheet"]}


def test_test_vocabulary_in_prose_or_output_is_an_offence():
    notebook = _fake_notebook("Under nbval this output is checked; see `make test`.", "Reproduce: python -m pytest x\n")
    notebook["cells"][0]["id"], notebook["cells"][1]["id"] = "c0", "c1"
    assert offences(notebook) == {"c0": ["make test", "nbval", "this output is checked"], "c1": ["pytest"]}
    clean = _fake_notebook("For further reading, `tests/test_tools.py` lists the inputs it refuses.", "42\n")
    clean["cells"][0]["id"], clean["cells"][1]["id"] = "c0", "c1"
    assert offences(clean) == {}


def test_the_prose_number_check_ignores_code_small_counts_and_names_and_accepts_cited_figures():
    prose = (
        "Step 2 of notebook 04, section 3. `max_steps=20` and\n```python\nrun(45)\n```\n"
        "o200k_base, SmolLM2-135M, 127.0.0.1 and [a paper](https://arxiv.org/abs/2210.03629).\n"
        '<img src="loop.png" width="600">\n'
        "> The fixed agent ran 45 steps with 34 real searches.\n> Source: the incident report.\n"
    )
    assert unshown_numbers(_fake_notebook(prose)) == []
    assert unshown_numbers(_fake_notebook("> The fixed agent ran 45 steps.\n> (no source named)\n")) == ["45"]
    assert unshown_numbers(_fake_notebook("The code says 45.", code="steps = 45")) == []
