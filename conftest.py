"""Hand out the longest files first, so pytest-xdist's workers finish together; fork notebook kernels warm.

With `--dist loadfile` a worker takes a whole file at a time, in collection order: long units first
and short ones last lets the short ones fill whichever worker frees up first.
"""
import os
import sys
from pathlib import Path

import pytest

from tests import warm_kernels

# The test command's settings, with make or without (python -m pytest): the offline stand-in and
# no key, whatever the shell or a .env says, so a learner's settings never change what is compared.
# Set while pytest loads this file, before any xdist worker or notebook kernel starts: they inherit it.
os.environ["AP_MODE"] = "fake"
os.environ["LLM_API_KEY"] = ""
# A learner's saved exercise progress never changes what is compared: under tests it stays in the kernel.
os.environ["AGENTKIT_PROGRESS"] = "off"
# A forked check the kernel has to end shows where its threads were (CONTRIBUTING.md: a rare hang not yet explained).
os.environ["AGENTKIT_FORK_DEBUG"] = "1"

# The files that take 3 s or more, longest first, measured under `make test` on 2026-12-06 (each file's test
# times added up from `--junitxml`, on a loaded machine): 24 s for the longest, 3 s for the last. Every other file
# follows in collection order: most take well under a second and fill whichever worker frees up first.
LONGEST_FIRST = ("test_capstone.py", "test_exercises.py", "test_capstone_routes.py", "test_wasm_sandbox.py",
                 "14_capstone.ipynb", "test_mcp.py", "16_frameworks_and_traces.ipynb", "test_bridge.py",
                 "13_memory_in_tiers.ipynb", "07_tree_of_thoughts.ipynb", "test_packaging.py", "test_widgets.py",
                 "05_reflection.ipynb", "11_real_models_and_tool_calling.ipynb", "test_exercises_clock.py",
                 "17_context_engineering.ipynb", "test_sandbox.py", "15_several_models_and_agents.ipynb",
                 "test_tokens.py", "test_exercises_wrong.py", "12_tools_that_change_the_world.ipynb",
                 "test_loopback.py", "test_real_client.py", "test_minilm.py", "test_local_model.py", "test_tools.py",
                 "test_parsing.py", "test_translations.py", "test_benchmarks.py", "09_hybrids_and_cost.ipynb",
                 "test_exercises_16.py", "18_public_benchmarks.ipynb", "test_course_tools.py",
                 "08_runtime_guards.ipynb", "test_exercises_framework.py", "04_plan_and_execute.ipynb",
                 "06_reflexion.ipynb", "test_plan.py")


def pytest_collection_modifyitems(items):
    def rank(item):
        name = item.fspath.basename
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each file's own order is kept


# The Chinese notebooks are the English ones with translated prose: tests/test_translations.py proves their code and
# outputs are the English ones byte for byte, so they are never executed a second time.
collect_ignore_glob = ["notebooks/zh-CN/*"]

warm_kernels.install()


def pytest_configure(config):
    """Every notebook's kernel is forked from one warm parent (tests/warm_kernels.py). It starts here,
    before pytest-xdist starts its workers (they inherit its address), so its imports overlap theirs."""
    if hasattr(config, "workerinput"):
        return
    paths = [Path(arg.split("::")[0]) for arg in config.args]
    if any(path.suffix == ".ipynb" or (path.is_dir() and next(path.rglob("*.ipynb"), None)) for path in paths):
        warm_kernels.start()


class _FormattedWhenLogged:
    """pprint.pformat(obj), computed only if a log record is really written."""

    def __init__(self, obj):
        self.obj = obj

    def __str__(self):
        import pprint

        return pprint.pformat(self.obj)


def _lazy_nbval_debug_log():
    """nbval logs every kernel message with logger.debug("...%s", pformat(msg)): the message, charts in
    base64 included, is pretty-printed even when debug logging is off, about 1 s of CPU per two notebooks.
    Formatting it only when the record is written changes nothing else."""
    try:
        import nbval.kernel
    except ImportError:
        return
    if getattr(nbval.kernel, "pformat", None) is not None:
        nbval.kernel.pformat = _FormattedWhenLogged


_lazy_nbval_debug_log()


@pytest.fixture(autouse=True)
def no_figure_left_open():
    """Close what a test left open: the next test in the same worker may count the open figures."""
    yield
    pyplot = sys.modules.get("matplotlib.pyplot")  # never imported here just to close nothing
    if pyplot is not None:
        pyplot.close("all")
