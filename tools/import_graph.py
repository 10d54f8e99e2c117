"""agentkit's import graph, read from the source with `ast`: every import, at the top or inside a function.

    python tools/import_graph.py          # each module and what it imports, its layer, and any problem
Exits 1 on an import circle or an arrow that points up the layers (see LAYERS and agentkit's docstring).
"""
from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agentkit"

# Lowest first; a module may import from its own layer or any layer below, never above.
LAYERS = {
    "foundations": ["data", "i18n", "text", "settings", "bpe", "tokens", "parsing", "tools", "faults", "batch", "game24",
                    "lessons", "tool_calls", "sandbox", "sandbox_supervisor", "wasm_module", "wasm_disk", "wasm_worker",
                    "wasm_sandbox", "data.make_game24",
                    "world", "mcp_server", "mcp_tools", "mcp_stdio", "mcp_poisoned", "game24_human", "retrieval", "memory_store", "memory_file",
                    "memory_data", "bfcl", "agentdojo_import"],
    "LLM layer": ["protocol", "grammar", "scripted", "openai_client", "llm", "local", "cassette", "cassette_miss", "recorder", "replay", "minilm", "embeddings"],
    "paradigms": ["react", "act", "plan", "reflection", "reflexion", "tot", "rewoo", "hybrid", "native", "runtime",
                  "context", "tasks", "evaluate", "lakeford", "approval", "pausable", "memory", "otel", "ledgers", "routing",
                  "team_guards", "members", "teams", "relay", "context_strategies", "context_tools", "caching",
                  "bfcl_models", "agentdojo_run"],
    "course": ["scripts", "scripts.*", "exercises", "exercises.*", "instruments", "capstone", "capstone_world", "modes", "loopback", "sick",
               "capstone_grader", "capstone_server", "capstone_client", "capstone_bar",
               "channels", "grammar_sweep", "runtime_suites", "paradigms", "frontier", "team_faults",
               "widgets", "widgets.*", "bridge", "bridge.*", "__init__", "long_context", "context_runs"],
}


def module_names() -> dict[str, Path]:
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(parts[:-1]) if parts[-1] == "__init__" and len(parts) > 1 else ".".join(parts)
        names[name] = path
    return names


@functools.lru_cache(maxsize=None)
def _import_statements(path: Path, stamp: tuple[int, int]) -> list[tuple[int, str | None, tuple[str, ...]]]:
    """(level, module, names) of every import in the file; parsed once per version of the file (`stamp`)."""
    statements = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            statements.append((node.level, node.module, tuple(alias.name for alias in node.names)))
        elif isinstance(node, ast.Import):
            statements += [(-1, alias.name, ()) for alias in node.names]
    return statements


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The agentkit modules `name` imports (relative or absolute, anywhere in the file)."""
    package = name.split(".") if path.name == "__init__.py" and name != "__init__" else name.split(".")[:-1]
    found = set()
    status = path.stat()
    for level, module, names in _import_statements(path, (status.st_mtime_ns, status.st_size)):
        if level == -1:  # import agentkit.x
            if module.startswith("agentkit"):
                found.add(module.removeprefix("agentkit").lstrip(".") or "__init__")
            continue
        if level:
            base = package[: len(package) - (level - 1)]
            target = ".".join(base + ([module] if module else []))
        elif (module or "").startswith("agentkit"):
            target = module.removeprefix("agentkit").lstrip(".")
        else:
            continue
        for alias in names:
            candidate = f"{target}.{alias}" if target else alias
            found.add(candidate if candidate in known else (target or "__init__"))
    found.discard(name)
    return {m for m in found if m in known}


def graph() -> dict[str, set[str]]:
    names = module_names()
    return {name: imports_of(name, path, set(names)) for name, path in names.items()}


def layer_of(name: str) -> int | None:
    for rank, members in enumerate(LAYERS.values()):
        for member in members:
            if member == name or (member.endswith(".*") and name.startswith(member[:-1])):
                return rank
    return None


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle, each once (as the path found by a depth-first search)."""
    found, state = [], {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    return found


def problems(edges: dict[str, set[str]]) -> list[str]:
    out = [f"no layer for {name}: add it to LAYERS" for name in sorted(edges) if layer_of(name) is None]
    names = list(LAYERS)
    for name in sorted(edges):
        for target in sorted(edges[name]):
            if None not in (layer_of(name), layer_of(target)) and layer_of(target) > layer_of(name):
                out.append(f"{name} ({names[layer_of(name)]}) imports {target} ({names[layer_of(target)]}), a layer above")
    out += ["import circle: " + " -> ".join(c) for c in circles(edges)]
    return out


def main() -> int:
    edges = graph()
    names = list(LAYERS)
    for name in sorted(edges, key=lambda n: (layer_of(n) if layer_of(n) is not None else 99, n)):
        rank = layer_of(name)
        print(f"{names[rank] if rank is not None else '?':11} {name:22} -> {', '.join(sorted(edges[name])) or '-'}")
    found = problems(edges)
    print("\n".join(found) if found else f"\n{len(edges)} modules, no import circle, every arrow points down the layers.")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
