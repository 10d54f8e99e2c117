"""The course as a static site: build/site/index.html plus every notebook as HTML with its stored outputs.

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


def build(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    from nbconvert import HTMLExporter  # here: the tests import this module for its helpers, and nbconvert costs ~0.4 s

    exporter = HTMLExporter(template_name="lab")
    rows, pages = [], []
    for path in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
        body = body.replace('href="SOURCES.md', 'href="SOURCES.html')  # every chapter's header links to the sources
        page = out / f"{path.stem}.html"
        page.write_text(body, encoding="utf-8")
        pages.append(page)
        title, goals = title_and_goals(nb)
        rows.append(f'<section><h2><a href="{page.name}">{html.escape(title or path.stem)}</a></h2>'
                    f'<p class="file">{path.name}</p>{mistune.html(goals)}</section>')
    sources = (ROOT / "notebooks" / "SOURCES.md").read_text(encoding="utf-8")
    (out / "SOURCES.html").write_text(f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>The course's sources</title>
<style>body {{ font-family: system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem;
line-height: 1.5; }}</style></head><body>{mistune.html(sources)}</body></html>
""", encoding="utf-8")
    # The README's first paragraph of prose (not its title, not the Colab line) introduces the course.
    paragraphs = (ROOT / "README.md").read_text(encoding="utf-8").split("\n\n")
    intro = next((mistune.html(p) for p in paragraphs if p.strip() and not p.startswith(("#", "[Open in Colab]"))), "")
    index = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agent paradigms, hands-on</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.5; }}
section {{ border-top: 1px solid #ddd; padding: 0.5rem 0; }}
h2 {{ margin-bottom: 0; font-size: 1.2rem; }}
.file {{ color: #666; margin: 0; font-family: monospace; }}
</style></head><body>
<h1>Agent paradigms, hands-on</h1>
{intro}
<p>These pages show each notebook with the outputs stored in the repository, computed by the offline
stand-in model. To run the cells and use the panels, clone the repository and run <code>make lab</code>.</p>
{''.join(rows)}
<p><a href="SOURCES.html">The course's sources</a>: practitioners' write-ups and papers, with authors and links.</p>
</body></html>
"""
    (out / "index.html").write_text(index, encoding="utf-8")
    return pages


def main() -> int:
    out = ROOT / "build" / "site"
    pages = build(out)
    print(f"{len(pages)} notebooks and index.html in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
