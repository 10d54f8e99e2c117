"""Put an "Open in Colab" link, a link to the sources and an install cell at the top of every chapter.

    python tools/colab_cell.py                      # notebooks/[0-9]*.ipynb and README.md, in place
    python tools/colab_cell.py --repo owner/name    # the one step that names the course's GitHub repository

The repository is kept in pyproject.toml (`[project.urls] Repository`), so a later run without --repo (as
`make notebooks` does) keeps it. Until it is set, it is the placeholder OWNER/REPO, and the header line says so
where a learner clicks, and the install cell explains itself instead of failing inside pip.

In each notebook the header is one Markdown line under the first heading, and the install cell comes
right after that first cell: it installs the course only where agentkit is missing (Colab, a bare
Jupyter), and turns on Colab's widget manager so the ipywidgets panels show. Where agentkit is
installed it prints nothing. Running the script again changes nothing; every other cell keeps
its bytes.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Placeholder until the course has its public home: the GitHub repository as owner/name.
PLACEHOLDER = "OWNER/REPO"
GITHUB_REPOSITORY = PLACEHOLDER  # what tests compare with when pyproject.toml names no other
BRANCH = "main"
SOURCES = "SOURCES.md"  # notebooks/SOURCES.md, beside the chapters
REPOSITORY_URL = re.compile(r'^Repository = "https://github\.com/([^"/]+/[^"/]+)"$', re.M)
TAG = "colab-install"  # marks the install cell, so a second run finds and updates it
CELL_ID = "colab-install"
LINK_LINE = re.compile(r"^\[Open in Colab\]\(https://colab\.research\.google\.com/github/[^)]*\).*$")
README_LINK = re.compile(r"^\[Open in Colab\]\(https://colab\.research\.google\.com/github/[^)]*\).*$", re.M)


def colab_url(repository: str, path: str) -> str:
    return f"https://colab.research.google.com/github/{repository}/blob/{BRANCH}/{path}"


def repository_in(pyproject: str) -> str:
    """The owner/name pyproject.toml's [project.urls] names, or the placeholder."""
    found = REPOSITORY_URL.search(pyproject)
    return found.group(1) if found else PLACEHOLDER


def with_repository(pyproject: str, repository: str) -> str:
    """pyproject.toml's text with its [project.urls] Repository line naming `repository`."""
    return REPOSITORY_URL.sub(lambda _: f'Repository = "https://github.com/{repository}"', pyproject, count=1)


def install_source(spec: str) -> str:
    """The install cell's code; spec is what pip installs (the repository URL, or a wheel in tests)."""
    if PLACEHOLDER in spec:
        install = f"""raise SystemExit("agentkit is not installed, and this copy of the course does not name its repository yet "
                     "({PLACEHOLDER}), so it cannot install itself. Open the course from a clone instead (make lab), "
                     "or use a copy whose publisher ran: python tools/colab_cell.py --repo owner/name")"""
    else:
        install = f'subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", {json.dumps(spec)}])'
    return f"""\
# On Colab, or any Jupyter without the course: install it (about a minute, once per session).
# Where agentkit is installed already, this cell does nothing and prints nothing.
import importlib.util
import subprocess
import sys

if importlib.util.find_spec("agentkit") is None:
    {install}
if "google.colab" in sys.modules:
    from google.colab import output

    output.enable_custom_widget_manager()  # Colab shows ipywidgets panels only with it on"""


def install_spec(repository: str) -> str:
    return f"agentkit @ git+https://github.com/{repository}"


def as_lines(text: str) -> list[str]:
    """A cell's source as Jupyter stores it: one string per line, each but the last ending in a newline."""
    return text.splitlines(keepends=True)


def header(url: str, chinese: str = "") -> str:
    """The line under a chapter's title: the Colab link (flagged while it names the placeholder), the sources, and
    the chapter's Chinese edition where it has one (`chinese`: its path from notebooks/)."""
    note = (f" (not yet: the course's repository is still the placeholder {PLACEHOLDER}; whoever publishes the "
            "course sets it with `python tools/colab_cell.py --repo owner/name`)") if PLACEHOLDER in url else ""
    return f"[Open in Colab]({url}){note} · [the course's sources]({SOURCES})" + (f" · [中文]({chinese})" if chinese else "")


def with_link(source: list[str], url: str, chinese: str = "") -> list[str]:
    """The first cell's source with the header line under its first heading (an older one removed first)."""
    lines = "".join(source).split("\n")
    old = next((i for i, line in enumerate(lines) if LINK_LINE.match(line)), None)
    if old is not None:  # the link and the blank line that came with it
        start = old - 1 if old > 0 and not lines[old - 1].strip() else old
        del lines[start:start + 2]
    heading = next((i for i, line in enumerate(lines) if line.startswith("#")), None)
    link = header(url, chinese)
    if heading is None:
        lines[0:0] = [link, ""]
    else:
        lines[heading + 1:heading + 1] = ["", link]
    return as_lines("\n".join(lines))


def install_cell(spec: str) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": CELL_ID,
        "metadata": {"tags": [TAG, "nbval-ignore-output"]},
        "outputs": [],
        "source": as_lines(install_source(spec)),
    }


def update_notebook(nb: dict, repository: str, relative_path: str, chinese: str = "") -> dict:
    """The notebook with the link and the install cell in place; every other cell is the same object."""
    cells = [c for c in nb["cells"] if TAG not in c.get("metadata", {}).get("tags", [])]
    first = cells[0]
    if first["cell_type"] == "markdown":
        first = dict(first, source=with_link(first["source"], colab_url(repository, relative_path), chinese))
        cells = [first] + cells[1:]
    else:
        link = {"cell_type": "markdown", "id": "colab-link", "metadata": {},
                "source": [header(colab_url(repository, relative_path), chinese)]}
        cells = [link] + cells
        first = link
    return dict(nb, cells=[first, install_cell(install_spec(repository))] + cells[1:])


def dumps(nb: dict) -> str:
    """The bytes Jupyter itself writes (nbformat's writer: indent 1, sorted keys, a final newline)."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


README_PIP = re.compile(r"git\+https://github\.com/[^\s\"`)]+")


def update_readme(text: str, repository: str) -> str:
    note = (f"; not yet: the repository is still the placeholder {PLACEHOLDER}, see [Colab](docs/running.md#colab)"
            if repository == PLACEHOLDER else "")
    line = (f"[Open in Colab]({colab_url(repository, 'notebooks/00_stateless_llm.ipynb')}) "
            f"(the first chapter; every notebook has its own link at the top{note})")
    text = README_PIP.sub(f"git+https://github.com/{repository}", text)
    if README_LINK.search(text):
        return README_LINK.sub(lambda _: line, text, count=1)
    title_end = text.index("\n") + 1  # under the README's title
    return text[:title_end] + "\n" + line + "\n" + text[title_end:]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", help="the GitHub repository, owner/name (kept in pyproject.toml)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the course folder (a copy, in tests)")
    args = parser.parse_args(argv)
    changed = []
    pyproject = args.root / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    if args.repo:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+", args.repo):
            parser.error(f"--repo takes a GitHub repository as owner/name, not {args.repo!r}")
        if pyproject.exists() and with_repository(text, args.repo) != text:
            pyproject.write_text(with_repository(text, args.repo), encoding="utf-8", newline="\n")
            changed.append(pyproject.name)
    args.repo = args.repo or repository_in(text)
    for path in sorted((args.root / "notebooks").glob("[0-9]*.ipynb")):
        before = path.read_text(encoding="utf-8")
        chinese = f"zh-CN/{path.name}" if (path.parent / "zh-CN" / path.name).exists() else ""
        after = dumps(update_notebook(json.loads(before), args.repo, path.relative_to(args.root).as_posix(), chinese))
        if after != before:
            path.write_text(after, encoding="utf-8", newline="\n")
            changed.append(path.name)
    readme = args.root / "README.md"
    if readme.exists():
        before = readme.read_text(encoding="utf-8")
        after = update_readme(before, args.repo)
        if after != before:
            readme.write_text(after, encoding="utf-8", newline="\n")
            changed.append(readme.name)
    print(f"updated {len(changed)} file(s)" + (": " + ", ".join(changed) if changed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
