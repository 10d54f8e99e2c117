"""agentkit as a real package: its wheel, installed by the Colab cell into a fresh environment, runs a chapter
from an empty folder, with no checkout on the path.

Fast and offline: the wheel is built with the installed setuptools (no build isolation), and the fresh
virtual environment sees this environment's packages through one .pth file (agentkit left out), so pip
finds every dependency installed and downloads nothing (PIP_NO_INDEX).
"""
from __future__ import annotations

import configparser
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import colab_cell  # noqa: E402

CHAPTER = "01_tools.ipynb"  # reads the knowledge base, which the wheel carries as agentkit/data


def clean_env(**extra) -> dict:
    """This process's environment without a path back to the checkout, pip kept offline."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PIP_TARGET")}
    return dict(env, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1", **extra)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """agentkit's wheel, built by setuptools from a copy of the sources (the checkout stays untouched)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "requirements.txt", "requirements-test.txt", "requirements-bridge.txt",
                 "requirements-benchmarks.txt"):
        shutil.copy(ROOT / name, source)
    for folder in ("agentkit", "data", "solutions"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("dist")
    build = "import sys\nfrom setuptools import build_meta\nprint(build_meta.build_wheel(sys.argv[1]))"
    name = subprocess.run([sys.executable, "-c", build, str(out)], cwd=source, env=clean_env(),
                          capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    return out / name


def fresh_venv(where: Path) -> Path:
    """A new virtual environment that borrows this one's packages (all but agentkit); its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where / "venv")], check=True)
    python = where / "venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    borrowed = where / "borrowed"
    borrowed.mkdir()
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        if not re.match(r"(agentkit|__editable__)", entry.name, re.I) and entry.suffix != ".pth":
            (borrowed / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    purelib = sysconfig.get_paths(vars={"base": str(where / "venv"), "platbase": str(where / "venv")})["purelib"]
    Path(purelib, "borrowed.pth").write_text(str(borrowed) + "\n")
    return python


def test_the_wheel_ships_the_course_data_and_the_pins_as_extras(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    # data/ at the top of the checkout is the package agentkit.data inside the wheel: every file of it, nothing else.
    shipped = {n.removeprefix("agentkit/data/") for n in names if n.startswith("agentkit/data/")}
    in_checkout = {str(p.relative_to(ROOT / "data")).replace(os.sep, "/") for p in (ROOT / "data").rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts}
    assert shipped == in_checkout
    assert not any(n.startswith("data/") for n in names)
    # pyproject.toml lists the packages by name: a new subpackage left out of that list fails here.
    modules = {str(p.relative_to(ROOT)).replace(os.sep, "/") for p in (ROOT / "agentkit").rglob("*.py")
               if "__pycache__" not in p.parts}
    assert modules <= names
    assert not any(n.startswith(("tests/", "notebooks/", "tools/", "solutions/")) for n in names)
    # solutions/ is the package agentkit.solutions: show_solution reads it wherever the wheel is installed.
    assert {f"agentkit/solutions/{p.name}" for p in (ROOT / "solutions").glob("*.py")} <= names
    assert 'Requires-Dist: numpy==2.5.5; python_version >= "3.15" and extra == "course"' in metadata
    assert 'Requires-Dist: pytest==9.2.0; extra == "test"' in metadata
    assert 'Requires-Dist: smolagents==1.26.0; extra == "bridge"' in metadata
    assert 'Requires-Dist: agentdojo==0.1.35; extra == "benchmarks"' in metadata
    assert "bfcl-eval" not in metadata  # installed apart, without its declared dependencies


def test_the_colab_cell_prints_nothing_where_agentkit_is_installed(capsys):
    exec(compile(colab_cell.install_source(colab_cell.install_spec("OWNER/REPO")), "colab-cell", "exec"), {})
    assert capsys.readouterr() == ("", "")


def sanitized(text: str) -> str:
    """Text as nbval compares it: the course's sanitizer rules applied."""
    rules = configparser.ConfigParser()
    rules.read(ROOT / "tests" / "nbval_sanitize.cfg")
    for section in rules.sections():
        text = re.sub(rules[section]["regex"], rules[section]["replace"], text)
    return text


# Runs in the fresh environment: every code cell of a notebook in an IPython shell (no kernel to
# start), printing for each one whether it ran and what it wrote to stdout, as JSON.
RUN_CELLS = r"""
import contextlib, io, json, sys
from IPython.core.interactiveshell import InteractiveShell
import agentkit
shell = InteractiveShell.instance()
report = {"agentkit": agentkit.__file__, "cells": []}
for cell in json.load(open(sys.argv[1], encoding="utf-8"))["cells"]:
    if cell["cell_type"] == "code":
        source = "".join(cell["source"]).replace("%matplotlib inline", "")  # MPLBACKEND=Agg instead
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            ok = shell.run_cell(source, silent=True).success  # silent: no Out[] text, as in a kernel's stdout
        report["cells"].append({"ok": ok, "stdout": out.getvalue()})
print(json.dumps(report))
"""


def test_the_colab_cell_installs_the_wheel_and_a_chapter_runs_without_a_checkout(wheel, tmp_path):
    try:
        python = fresh_venv(tmp_path)
    except OSError as e:  # symbolic links need a privilege on some Windows machines
        pytest.skip(f"cannot link this environment's packages: {e}")
    empty = tmp_path / "learner"
    empty.mkdir()
    env = clean_env(MPLBACKEND="Agg", AP_MODE="fake", LLM_API_KEY="")

    def run(*args):
        return subprocess.run([str(python), *args], cwd=empty, env=env, capture_output=True, text=True, timeout=120)

    assert run("-c", "import importlib.util; assert importlib.util.find_spec('agentkit') is None").returncode == 0
    cell = run("-c", colab_cell.install_source(str(wheel)))  # the cell as Colab runs it, the wheel for the URL
    assert cell.returncode == 0, cell.stderr

    shutil.copy(ROOT / "notebooks" / CHAPTER, empty)  # as a learner downloads one notebook
    (tmp_path / "run_cells.py").write_text(RUN_CELLS)
    result = run(str(tmp_path / "run_cells.py"), CHAPTER)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert Path(report["agentkit"]).is_relative_to(tmp_path / "venv")  # the installed wheel, not the checkout
    shown = run("-c", "from agentkit.exercises import show_solution; print(show_solution('01.guard'))")
    assert "def power_allowed(" in shown.stdout, shown.stderr  # worked solutions travel with the wheel

    stored = [c for c in json.loads((ROOT / "notebooks" / CHAPTER).read_text(encoding="utf-8"))["cells"]
              if c["cell_type"] == "code"]
    assert len(report["cells"]) == len(stored)
    for ran, cell in zip(report["cells"], stored):
        source = "".join(cell["source"])[:80]
        assert ran["ok"], source
        if "nbval-ignore-output" not in cell["metadata"].get("tags", []):
            expected = "".join("".join(o["text"]) for o in cell["outputs"]
                               if o["output_type"] == "stream" and o["name"] == "stdout")
            assert sanitized(ran["stdout"]) == sanitized(expected), source


# --- macOS and Windows -------------------------------------------------------------------------

POSIX_ONLY_MODULES = {"resource", "pwd", "grp", "fcntl", "termios", "pty", "posix"}
POSIX_ONLY_NAMES = {"fork", "getuid", "geteuid", "getgid", "setsid", "setpgid", "killpg", "prctl", "SIGKILL"}
# Each use reviewed, each reached only where it exists: agentkit.mcp_stdio finds a server's helpers that left its
# process group in /proc when there is one (else through psutil, or not at all) and SIGKILLs them, never on
# Windows (its Job Object holds them; strays() returns nothing there).
GUARDED = {("agentkit/mcp_stdio.py", name) for name in ("/proc/self", "/proc", "/proc/", "SIGKILL")}
# agentkit.exercises runs a check in a forked child only where forked.AVAILABLE (os.fork, setpgid and killpg exist),
# else in-process; `ex.fork` in __init__ is the exercise's own flag, not os.fork; its __main__ imports resource
# under `except ImportError` (the instructors' overhead measure).
GUARDED |= {("agentkit/exercises/__init__.py", "fork"), ("agentkit/exercises/child.py", "setpgid"),
            ("agentkit/exercises/__main__.py", "resource")}
GUARDED |= {("agentkit/exercises/forked.py", name) for name in ("fork", "killpg", "SIGKILL")}


def test_agentkit_outside_the_sandbox_calls_nothing_linux_only():
    """What every chapter imports runs on macOS and Windows: no POSIX-only module, call or /proc.

    The sandbox modules are left out: they confine model-written code with the OS's own limits.
    """
    import ast

    # Only files whose text holds one of the words are parsed: the package is 1.5 MB of source.
    words = re.compile(r"\b(?:%s)\b|/proc" % "|".join(sorted(POSIX_ONLY_MODULES | POSIX_ONLY_NAMES)))
    found = []
    for path in sorted((ROOT / "agentkit").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if path.name.startswith("sandbox") or not words.search(text):
            continue
        for node in ast.walk(ast.parse(text)):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in POSIX_ONLY_MODULES]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in POSIX_ONLY_MODULES:
                names = [node.module]
            elif isinstance(node, ast.Attribute) and node.attr in POSIX_ONLY_NAMES:
                names = [node.attr]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("/proc"):
                names = [node.value]
            where = path.relative_to(ROOT).as_posix()
            found += [f"{where}:{node.lineno}: {name}" for name in names if (where, name) not in GUARDED]
    assert found == []
