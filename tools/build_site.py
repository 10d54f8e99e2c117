"""The course as a static site: build/site/index.html plus every notebook as HTML with its stored outputs, and the
Chinese edition the same way in build/site/zh-CN/, each index linking the other.

    make site            # then open build/site/index.html, or serve the folder anywhere

Nothing is executed: the pages show the outputs stored in the notebooks (the ones nbval checks).
Charts are embedded in the pages, so the folder works offline and from any static host.
A panel shows its stored placeholder: it needs a running kernel.
"""
from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import mistune
import nbformat

ROOT = Path(__file__).resolve().parent.parent


def title_and_goals(nb) -> tuple[str, str]:
    """The notebook's first heading, and its "you will be able to" list as Markdown."""
    title, goals = "", ""
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        if not title:
            heading = re.search(r"(?m)^#\s+(.+)$", cell.source)
            title = heading.group(1).strip() if heading else ""
        if "able to" in cell.source and not goals:
            lines = []
            for line in cell.source.split("able to", 1)[1].splitlines()[1:]:
                if re.match(r"\s*[-*]\s", line) or (lines and line.strip() and line[:1].isspace()):
                    lines.append(line)
                elif lines and not line.strip():
                    break
            goals = "\n".join(lines)
        if title and goals:
            break
    return title, goals


# Each edition: where its notebooks, sources page and README are, and the words its index page uses.
EDITIONS = {
    "en": dict(notebooks="notebooks", readme="README.md", title="Agent paradigms, hands-on", other="中文版",
               note="These pages show each notebook with the outputs stored in the repository, computed by the "
                    "offline stand-in model. To run the cells and use the panels, clone the repository and run "
                    "<code>make lab</code>.",
               sources="<a href=\"SOURCES.html\">The course's sources</a>: practitioners' write-ups and papers, "
                       "with authors and links."),
    "zh-CN": dict(notebooks="notebooks/zh-CN", readme="README.zh-CN.md", title="动手学智能体范式", other="English",
                  note="这些页面展示每个 notebook 以及仓库里保存的输出（由离线替身模型算出）。要运行单元格、使用面板，"
                       "请克隆仓库并运行 <code>make lab-zh</code>。",
                  sources="<a href=\"SOURCES.html\">课程的资料来源</a>：实践者的文章和论文，附作者和链接。"),
}


def build_edition(out: Path, lang: str, other_index: str) -> list[Path]:
    """One edition's pages: every notebook with its stored outputs, the sources page, and an index."""
    edition = EDITIONS[lang]
    out.mkdir(parents=True, exist_ok=True)
    from nbconvert import HTMLExporter  # here: the tests import this module for its helpers, and nbconvert costs ~0.4 s

    exporter = HTMLExporter(template_name="lab")
    rows, pages = [], []
    for path in sorted((ROOT / edition["notebooks"]).glob("[0-9]*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
        # Links between the course's pages (a chapter's header: the sources, the other edition) point at the HTML.
        body = re.sub(r'href="((?:\.\./|zh-CN/)?(?:[0-9][^"/]*\.ipynb|SOURCES\.md))', lambda m: 'href="' + re.sub(
            r"\.(ipynb|md)$", ".html", m.group(1)), body)
        body = body.replace('href="SOURCES.md#', 'href="SOURCES.html#')
        page = out / f"{path.stem}.html"
        page.write_text(body, encoding="utf-8")
        pages.append(page)
        title, goals = title_and_goals(nb)
        rows.append(f'<section><h2><a href="{page.name}">{html.escape(title or path.stem)}</a></h2>'
                    f'<p class="file">{path.name}</p>{mistune.html(goals)}</section>')
    sources = (ROOT / edition["notebooks"] / "SOURCES.md").read_text(encoding="utf-8")
    (out / "SOURCES.html").write_text(f"""<!DOCTYPE html>
<html lang="{lang}"><head><meta charset="utf-8"><title>{html.escape(edition["title"])}</title>
<style>body {{ font-family: system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem;
line-height: 1.5; }}</style></head><body>{mistune.html(sources)}</body></html>
""", encoding="utf-8")
    # The README's first paragraph of prose (not its title, not the Colab line, not the language switch).
    paragraphs = (ROOT / edition["readme"]).read_text(encoding="utf-8").split("\n\n")
    intro = next((mistune.html(p) for p in paragraphs
                  if p.strip() and not p.startswith(("#", "[Open in Colab]", "[在 Colab", "[中文版]", "[English]"))), "")
    index = f"""<!DOCTYPE html>
<html lang="{lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(edition["title"])}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.5; }}
section {{ border-top: 1px solid #ddd; padding: 0.5rem 0; }}
h2 {{ margin-bottom: 0; font-size: 1.2rem; }}
.file {{ color: #666; margin: 0; font-family: monospace; }}
.switch {{ float: right; }}
</style></head><body>
<p class="switch"><a href="{other_index}">{edition["other"]}</a></p>
<h1>{html.escape(edition["title"])}</h1>
{intro}
<p>{edition["note"]}</p>
{''.join(rows)}
<p>{edition["sources"]}</p>
</body></html>
"""
    (out / "index.html").write_text(index, encoding="utf-8")
    return pages


def build(out: Path) -> list[Path]:
    """The English site in out/, the Chinese one in out/zh-CN/, each index linking the other."""
    pages = build_edition(out, "en", "zh-CN/index.html")
    if (ROOT / EDITIONS["zh-CN"]["notebooks"]).is_dir():
        pages += build_edition(out / "zh-CN", "zh-CN", "../index.html")
    return pages


def main() -> int:
    out = ROOT / "build" / "site"
    pages = build(out)
    print(f"{len(pages)} notebooks in {out} (English) and {out / 'zh-CN'} (Chinese), each with its index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
