"""Hand out the longest files first, so pytest-xdist's workers finish together.

With `--dist loadfile` a worker takes a whole file at a time, in collection order. Measured
under `make test` (wall time, a kernel's start-up included): the longest notebooks (05, 07, 08,
11, 12) 4-9 s, the others 2-4 s, the slow test files 3-6 s, most test files under 1 s. Long units
first and short ones last lets the short ones fill whichever worker frees up first.
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

# The longest notebook: model-written code run in the WebAssembly sandbox, timings included.
REAL_MODEL = "05_reflection.ipynb"
# Test files that take a few seconds (every panel clicked; a second Python with its own
# llama.cpp server; dozens of sandboxed processes).
SLOW_TEST_FILES = ("test_widgets.py", "test_local_model.py", "test_sandbox.py", "test_wasm_sandbox.py",
                   "test_mcp.py", "test_world.py", "test_memory.py", "test_packaging.py", "test_replay.py",
                   "test_warm_kernels.py")


def pytest_collection_modifyitems(items):
    def rank(item):
        path = str(item.fspath)
        if path.endswith(REAL_MODEL):
            return 0
        if path.endswith(".ipynb"):
            return 1  # a kernel each, then every cell
        if path.endswith(SLOW_TEST_FILES):
            return 2
        return 3

    items.sort(key=rank)  # stable: each file's own order is kept


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
