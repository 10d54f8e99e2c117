"""AgentDojo's suites, attacks and runtime, imported without the vendor SDKs that its pipeline package loads.

Why: `agentdojo/agent_pipeline/__init__.py` imports every vendor's model class, and with them the SDKs of Anthropic,
Cohere, Google and OpenAI (about 3 s of CPU on the course's 2-core machine, 2026-12-06, most of chapter 18's run
time), and `agent_pipeline/tool_execution.py` imports Google's for one constant. The task suites need from that
package only the pipeline's base class, the ground-truth pipeline and `tool_result_to_str`; agentkit.agentdojo_run
needs no more. So `lean()`, called before AgentDojo is imported, registers two modules:
* `agentdojo.agent_pipeline`: the package without its `__init__` (its submodules import from its folder as usual);
* `agentdojo.agent_pipeline.tool_execution`: only `tool_result_to_str`, written here, which gives AgentDojo's text
  for every result (tests/test_benchmarks.py compares the two on every tool result the suites produce).
The first time anything else is asked of either, it runs AgentDojo's own code (a module `__getattr__`), so other
code in the process still finds all of AgentDojo, at the full import's cost. Where AgentDojo is imported already,
is not installed, or its files are not the ones this was written for (a moved file, a changed
`tool_result_to_str`), `lean()` registers nothing and AgentDojo imports the plain way.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import sys
from pathlib import Path

PACKAGE = "agentdojo.agent_pipeline"
TOOL_EXECUTION = f"{PACKAGE}.tool_execution"
# sha256 of `tool_result_to_str`'s source in AgentDojo 0.1.35's agent_pipeline/tool_execution.py: the function
# below was written to give its text. Any other source, and AgentDojo's own module is imported instead.
MIRRORED = "f0c0efe7881a3f80c2cbfd12eb19de5e0543a58a4d2c9212efee6b710c847f2e"


def tool_result_to_str(tool_result, dump_fn=None) -> str:
    """A tool's result as AgentDojo shows it to the model: a pydantic model, or a list of them, strings and
    integers, as YAML (`dump_fn`, by default yaml.safe_dump); anything else as `str()`."""
    import yaml
    from pydantic import BaseModel

    dump = dump_fn or yaml.safe_dump
    if isinstance(tool_result, BaseModel):
        return dump(tool_result.model_dump()).strip()
    if not isinstance(tool_result, list):
        return str(tool_result)
    items = []
    for item in tool_result:
        if type(item) in (str, int):
            items.append(str(item))
        elif isinstance(item, BaseModel):
            items.append(item.model_dump())
        else:
            raise TypeError(f"Not valid type for item tool result: {type(item)}")
    return dump(items).strip()


def _installed() -> Path | None:
    """AgentDojo's folder, found without importing it; None where it is not installed."""
    try:
        spec = importlib.util.find_spec("agentdojo")
    except (ImportError, ValueError):
        return None
    return Path(list(spec.submodule_search_locations)[0]) if spec and spec.submodule_search_locations else None


def _pipeline_folder(agentdojo: Path | None) -> Path | None:
    """Its agent_pipeline folder, if its files are the ones this module was written for."""
    if agentdojo is None:
        return None
    folder = agentdojo / "agent_pipeline"
    try:
        source = (folder / "tool_execution.py").read_text(encoding="utf-8")
        functions = [ast.get_source_segment(source, node) for node in ast.parse(source).body
                     if isinstance(node, ast.FunctionDef) and node.name == "tool_result_to_str"]
    except (OSError, SyntaxError, ValueError):
        return None
    same = len(functions) == 1 and hashlib.sha256(functions[0].encode()).hexdigest() == MIRRORED
    return folder if same and (folder / "__init__.py").is_file() else None


def _deferred(name: str, path: Path, package: Path | None = None, **names):
    """A module that holds `names` and runs its own file only when something else is asked of it."""
    spec = importlib.util.spec_from_file_location(name, path,
                                                  submodule_search_locations=[str(package)] if package else None)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(names)

    def __getattr__(attribute):
        # Python's import machinery probes dunders (`__path__`, `__wrapped__`...): those must not load the module.
        if attribute.startswith("__") and attribute != "__all__":
            raise AttributeError(attribute)
        del module.__dict__["__getattr__"]
        spec.loader.exec_module(module)
        return getattr(module, attribute)

    module.__getattr__ = __getattr__
    return module


@functools.cache
def lean() -> bool:
    """Register the two modules (see above); False where AgentDojo is imported already or not as expected."""
    folder = _pipeline_folder(_installed())
    if folder is None:
        return False
    import agentdojo  # its __init__ is empty in 0.1.35; were it to import the pipeline, that import stands

    if PACKAGE in sys.modules:
        return False
    package = _deferred(PACKAGE, folder / "__init__.py", folder)
    package.tool_execution = _deferred(TOOL_EXECUTION, folder / "tool_execution.py",
                                       tool_result_to_str=tool_result_to_str)
    sys.modules[PACKAGE], sys.modules[TOOL_EXECUTION] = package, package.tool_execution
    agentdojo.agent_pipeline = package  # as the import system links a package to its parent
    return True
