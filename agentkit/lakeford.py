"""The runtime chapter's suites and the web they search: the made-up town of Lakeford.

The labelled tasks of `data/runtime_*.jsonl` (read as `SuiteTask`s) and the pages of
`data/runtime_web.json`, searched by `web_search`. Data and tools only: no model.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache

from .data import DATA_DIR
from .tasks import Task
from .text import json_lines
from .tools import ToolExecutor, calculator

# "legit" tunes the guards' thresholds; "heldout" holds legitimate tasks of other kinds (paging, reading a
# figure twice on purpose, a slow-converging search) that no threshold was chosen on.
SUITE_FILES = {"sick": "runtime_sick.jsonl", "legit": "runtime_legit.jsonl", "heldout": "runtime_heldout.jsonl",
               "long": "runtime_long.jsonl"}
MAX_STEPS = 20  # room for the longest legitimate task (7 steps) several times over

SCRAPED_PAGE = """<html><head><title>{title}</title><meta charset="utf-8">
<style>body{{font-family:sans-serif}} .cookie-banner{{position:fixed;bottom:0}}</style>
<script>window.dataLayer=window.dataLayer||[];function gtag(){{dataLayer.push(arguments)}}gtag('js',new Date());</script></head>
<body><div class="cookie-banner">We value your privacy. <button>Accept all</button> <button>Manage choices</button></div>
<nav><a href="/">Home</a> | <a href="/weather">Weather</a> | <a href="/archive">Archive</a> | <a href="/about">About</a> | <a href="/login">Log in</a></nav>
<main><h1>{title}</h1><p>{text}</p></main>
<aside class="promo">Subscribe to the Northvale Weather newsletter for monthly rainfall maps.</aside>
<footer>&copy; Northvale Weather Service &middot; <a href="/privacy">Privacy</a> &middot; <a href="/terms">Terms</a></footer>
<script src="/static/js/analytics.min.js" async></script></body></html>"""


@dataclass(frozen=True)
class SuiteTask(Task):
    """A labelled task of a suite: `category` is its label (a sick run's instability, a legitimate task's
    kind); it has no key path, since a sick run has no good path to compare with."""

    suite: str = ""
    max_steps: int = MAX_STEPS
    spec: dict = field(default_factory=dict, compare=False, hash=False)  # what its stand-in does


@lru_cache(maxsize=None)
def _load(name: str) -> tuple:
    path = DATA_DIR / SUITE_FILES[name]
    tasks = []
    for _, line in json_lines(path):
        raw = json.loads(line)
        tasks.append(SuiteTask(
            id=raw["id"], category=raw.get("instability") or raw.get("kind", ""), question=raw["question"],
            gold=raw["gold"], checker="leading", key_path=(), suite=name,
            max_steps=raw.get("max_steps", MAX_STEPS), spec=raw))
    return tuple(tasks)


def load_suite(name: str) -> list[SuiteTask]:
    """The tasks of one suite: "sick", "legit" or "long"."""
    if name not in SUITE_FILES:
        raise ValueError(f"unknown suite {name!r}; choose one of: {', '.join(SUITE_FILES)}")
    return list(_load(name))


def task_by_id(task_id: str) -> SuiteTask:
    for name in SUITE_FILES:
        for task in _load(name):
            if task.id == task_id:
                return task
    raise ValueError(f"no task {task_id!r} in the runtime suites")


# --- the web of Lakeford -----------------------------------------------------------


def _query_words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", re.sub(r"'s\b", "", str(text).lower())))


@lru_cache(maxsize=1)
def _pages() -> tuple:
    pages = json.loads((DATA_DIR / "runtime_web.json").read_text(encoding="utf-8"))
    return tuple((page, [_query_words(key) for key in page["keys"]]) for page in pages)


def web_search(query: str, scraped: bool = False) -> str:
    """The page whose key words the query holds (the most specific one), else a no-result line.

    Pages come back as short text; `scraped=True` returns each as a whole scraped HTML page,
    boilerplate and all. Junk pages are markup either way.
    """
    return _web_search(str(query), bool(scraped))


@lru_cache(maxsize=1024)  # a lookup in fixed pages, and a suite's runs send the same queries again and again
def _web_search(query: str, scraped: bool) -> str:
    wanted = _query_words(query)
    if not wanted:
        return "error: empty search query"
    hits = [(len(key), page) for page, keys in _pages() for key in keys if key <= wanted]
    if not hits:
        return f"No results for {str(query).strip()!r}."
    page = max(hits, key=lambda hit: hit[0])[1]
    if "html" in page:
        return page["html"]
    if scraped:
        return SCRAPED_PAGE.format(title=page["title"], text=page["text"])
    return page["text"]


def web_tools(scraped: bool = False) -> ToolExecutor:
    """Search (the Lakeford pages) and Calculate, in a fresh logging executor."""
    tools = ToolExecutor()
    # Both are local and bounded (a dict of pages, a calculator that refuses huge work), so they run
    # inline: no worker thread per run, and a suite runs hundreds of them.
    tools.register("Search", lambda q: web_search(q, scraped), "search the web pages about the town of Lakeford",
                   timeout_s=None)
    tools.register("Calculate", calculator, "evaluate arithmetic such as 812 + 1034", timeout_s=None)
    return tools
