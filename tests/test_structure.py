"""agentkit's structure: dependencies point down the layers, with no import circle.

The graph is read from the source (tools/import_graph.py), imports inside functions included, so a
lazy import cannot hide an arrow. The layers are written down in agentkit's docstring.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import import_graph  # noqa: E402


def test_no_import_circle_and_every_arrow_points_down():
    assert import_graph.problems(import_graph.graph()) == []


def test_no_agent_llm_client_or_tool_imports_the_stand_ins_rules():
    edges = import_graph.graph()
    below_the_course = [n for n in edges if import_graph.layer_of(n) < list(import_graph.LAYERS).index("course")]
    assert {"react", "native", "plan", "protocol", "llm", "tools"} <= set(below_the_course)
    reaching_scripts = {n: sorted(t for t in edges[n] if t == "scripts" or t.startswith("scripts."))
                        for n in below_the_course}
    assert {n: t for n, t in reaching_scripts.items() if t} == {}


def test_the_checker_sees_a_circle_an_upward_arrow_and_a_lazy_import(tmp_path, monkeypatch):
    package = tmp_path / "agentkit"
    (package / "scripts").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "scripts" / "__init__.py").write_text("from ..react import MARKER\n")
    (package / "react.py").write_text("MARKER = 'x'\n\ndef run():\n    from .scripts import RULES\n")
    (package / "tokens.py").write_text("from agentkit.react import MARKER\n")
    monkeypatch.setattr(import_graph, "PACKAGE", package)
    found = import_graph.problems(import_graph.graph())
    assert "react (paradigms) imports scripts (course), a layer above" in found
    assert "tokens (foundations) imports react (paradigms), a layer above" in found
    assert any(p.startswith("import circle: ") and "react" in p and "scripts" in p for p in found)


def test_the_layers_are_written_in_the_package_docstring():
    import agentkit

    for layer in import_graph.LAYERS:
        assert layer in agentkit.__doc__
