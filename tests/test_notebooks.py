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
        if "".join(cell["source"]).strip():
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
