"""The safe calculator, the knowledge-base search and the tool executor."""
import json
import signal
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import tools as tools_module
from agentkit.tools import (
    ERROR_PREFIX,
    MAX_QUERY_CHARS,
    TOOL_TIMEOUT_S,
    KnowledgeBase,
    ToolExecutor,
    calculator,
    default_executor,
    is_error,
    search,
)

# --- calculator: arithmetic ----------------------------------------------------


@pytest.mark.parametrize(
    "expression, expected",
    [
        ("(2024 - 1955) * 365", "25185"),  # the course's ReAct checkpoint
        ("23 - 20 + 6", "9"),
        ("7 / 2", "3.5"),
        ("7 // 2", "3"),
        ("-7 % 3", "2"),
        ("2 ** 10", "1024"),
        ("2 ** -1", "0.5"),
        ("0.1 + 0.2", "0.3"),
        ("-(-3)", "3"),
        ("+4", "4"),
        ("1_000 * 3", "3000"),
        ("0x10 + 1", "17"),
        ("  12  ", "12"),
        ("1" + "+1" * 149, "150"),  # a long flat sum (299 characters) is not "deep nesting"
        ("1" + "+2-1" * 74, "75"),  # nor is a long flat chain of mixed operators
        ("10 ** 100", str(10**100)),  # exactly at the size limit
        ("1000 / 7", "142.8571428571"),  # 10 decimals
        ("1 / 6**20", "2.735111228e-16"),  # a tiny result keeps 10 significant digits, not 0
        ("2 ** -40", "9.094947018e-13"),
        ("-1 / 3**30", "-4.85693575e-15"),
    ],
)
def test_calculator_does_arithmetic(expression, expected):
    assert calculator(expression) == expected


small_ints = st.integers(min_value=-1000, max_value=1000).map(str)
operators = st.sampled_from(["+", "-", "*"])


@st.composite
def int_expressions(draw, depth=3):
    if depth == 0 or draw(st.booleans()):
        return draw(small_ints)
    return f"({draw(int_expressions(depth - 1))} {draw(operators)} {draw(int_expressions(depth - 1))})"


@settings(max_examples=100, deadline=None)
@given(int_expressions())
def test_calculator_agrees_with_python_on_small_integer_arithmetic(expression):
    # Trusted, generated text: python's eval is the oracle here, never in the tool.
    assert calculator(expression) == str(eval(expression))


# --- calculator: hostile input ----------------------------------------------------

HOSTILE = {
    "tower 9**9**9": "9**9**9",
    "tower 10**10**10": "10**10**10",
    "tower 2**10**8": "2**10**8",
    "huge power of a float": "1.5 ** 999.5",
    "overflow via a negative exponent": "1e-100 ** -1000",
    "huge product": "10**99 * 10**99",
    "huge int literal": "9" * 200,
    "huge float literal": "1e400",
    "too long": "1+" * 200 + "1",
    "deep unary nesting": "-" * 120 + "1",
    "deep parentheses": "(" * 120 + "1" + ")" * 120,
    "string": "'a' * 10",
    "f-string": "f'{1}'",
    "bytes": "b'x'",
    "import call": "__import__('os').system('id')",
    "builtin call": "open('/etc/passwd').read()",
    "attribute access": "(1).__class__",
    "dunder walk": "().__class__.__bases__[0].__subclasses__()",
    "name": "x + 1",
    "lambda": "(lambda: 1)()",
    "list comprehension": "[i for i in range(10**9)]",
    "generator": "sum(i for i in range(10))",
    "bool": "True + True",
    "comparison": "1 < 2",
    "conditional": "1 if 2 else 3",
    "bit shift": "1 << 10**8",
    "bitwise not": "~1",
    "logical not": "not 1",
    "complex literal": "1j * 1j",
    "complex result": "(-8) ** (1/3)",
    "ellipsis": "...",
    "tuple": "1, 2",
    "subscript": "[1, 2][0]",
    "walrus": "(x := 1)",
    "statement": "import os",
    "division by zero": "1 / 0",
    "zero to a negative power": "0 ** -1",
    "empty": "   ",
    "null byte": "1\x00+1",
    "not python": "two plus two",
}


@pytest.mark.parametrize("payload", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_input_is_refused_with_an_error_after_bounded_work(payload, monkeypatch):
    # The work of arithmetic grows with the size of its numbers: every number the calculator makes goes through
    # _check_size, so their sizes bound it. 1,024 bits holds the largest literal that fits in MAX_EXPRESSION_CHARS
    # (300 digits, 997 bits) and the product of two numbers under the 1e100 limit; 9**9**9 has 1.2 billion.
    made = []
    check = tools_module._check_size
    monkeypatch.setattr(tools_module, "_check_size", lambda value: made.append(value) or check(value))
    result = calculator(payload)
    assert result.startswith(ERROR_PREFIX) and is_error(result)
    assert max((abs(v).bit_length() for v in made if isinstance(v, int)), default=0) <= 1_024, payload
    assert len(made) <= tools_module.MAX_EXPRESSION_CHARS  # one number per node at most, and nodes need text


@pytest.mark.parametrize(
    "payload, reason",
    [
        ("9**9**9", "exponent"),
        ("10**10**10", "exponent"),
        ("2**10**8", "exponent"),
        ("9" * 200, "too large"),
        ("-" * 120 + "1", "nested deeper"),
        ("(" * 120 + "1" + ")" * 120, "nested deeper"),
        ("__import__('os').system('id')", "Call"),
        ("(1).__class__", "Attribute"),
        ("x + 1", "Name"),
        ("(lambda: 1)()", "Call"),
        ("lambda: 1", "Lambda"),
        ("[i for i in range(3)]", "ListComp"),
        ("True + 1", "bool"),
        ("'a'", "str"),
        ("1 << 2", "LShift"),
        ("(-8) ** (1/3)", "complex"),
        ("1 / 0", "division by zero"),
    ],
)
def test_refusals_name_the_reason(payload, reason):
    assert reason in calculator(payload)


def test_code_in_the_expression_never_runs(tmp_path):
    marker = tmp_path / "marker"
    result = calculator(f"__import__('pathlib').Path({str(marker)!r}).touch()")
    assert is_error(result)
    assert not marker.exists()


def test_non_string_input_is_converted_or_refused():
    class Hostile:
        def __str__(self):
            raise RuntimeError("boom")

    assert calculator(12) == "12"
    assert is_error(calculator(None))
    assert is_error(calculator(Hostile()))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_calculator_never_raises_on_arbitrary_text(text):
    result = calculator(text)
    assert isinstance(result, str) and result
    if not is_error(result):
        float(result)  # anything that is not an error is a plain number


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789.+-*/%()eE _j", max_size=120))
def test_calculator_never_raises_on_arithmetic_looking_text(text):
    result = calculator(text)
    assert is_error(result) or float(result) == float(result)


# --- search ----------------------------------------------------------------------


def test_search_finds_the_course_checkpoint_fact():
    assert "February 24, 1955" in search("When was Steve Jobs born?")
    assert "February 24, 1955" in search("Steve Jobs")


def test_search_miss_says_so_and_is_not_an_error():
    result = search("the capital of Atlantis")
    assert result == "No information about 'the capital of Atlantis' in the knowledge base."
    assert not is_error(result)


@pytest.mark.parametrize("query", ["", "   ", None])
def test_empty_query_is_an_error(query):
    result = search(query if query is not None else "")
    assert is_error(result) and "empty" in result


def test_overlong_query_is_an_error():
    result = search("Steve Jobs " * (MAX_QUERY_CHARS // 5))
    assert is_error(result) and "too long" in result
    assert not is_error(search("Steve Jobs " * ((MAX_QUERY_CHARS - 10) // 11)))


def test_every_entry_is_found_by_its_own_title_and_aliases():
    kb = KnowledgeBase.load()
    assert 15 <= len(kb.entries) <= 25
    for entry in kb.entries:
        for name in [entry["title"], *entry.get("aliases", [])]:
            assert kb.lookup(name) is entry, name


def test_possessive_and_case_still_match():
    assert "1955" in search("STEVE JOBS's birthday")


def test_knowledge_base_loads_from_a_given_file(tmp_path):
    path = tmp_path / "kb.json"
    path.write_text(json.dumps([{"title": "Zorblax", "text": "Zorblax is a made-up word."}]))
    kb = KnowledgeBase.load(path)
    assert kb.search("zorblax") == "Zorblax is a made-up word."
    assert kb.search("Steve Jobs").startswith("No information about")


@pytest.mark.parametrize("bad", [[{"title": "x"}], [{"title": "", "text": "y"}], ["just text"]])
def test_malformed_knowledge_base_is_rejected_at_load(bad):
    with pytest.raises(ValueError, match="entry 0"):
        KnowledgeBase(bad)


# --- executor ----------------------------------------------------------------------


def test_register_run_and_describe():
    tools = ToolExecutor()
    tools.register("Echo", lambda text: text, "repeat the input")
    tools.register("Upper", str.upper, "shout the input")
    assert tools.describe() == "- Echo[input]: repeat the input\n- Upper[input]: shout the input"
    assert tools.run("Echo", "hi") == "hi"
    assert tools.run("upper", "hi") == "HI"  # models vary the case of tool names
    assert [(c.tool, c.argument, c.output, c.ok) for c in tools.log] == [
        ("Echo", "hi", "hi", True),
        ("Upper", "hi", "HI", True),
    ]


def test_unknown_tool_lists_the_known_ones_and_is_logged():
    tools = default_executor()
    result = tools.run("Wikipedia", "Steve Jobs")
    assert is_error(result)
    assert "Wikipedia" in result and "Search" in result and "Calculate" in result
    assert [(c.tool, c.ok) for c in tools.log] == [("Wikipedia", False)]
    assert "(none registered)" in ToolExecutor().run("Search", "x")


def test_a_raising_tool_becomes_an_error_observation_logged_not_ok():
    def broken(text):
        raise ConnectionError("service down")

    tools = ToolExecutor()
    tools.register("Broken", broken, "always fails")
    result = tools.run("Broken", "anything")
    assert result == "error: tool Broken failed: ConnectionError: service down"
    assert len(tools.log) == 1 and tools.log[0].ok is False and tools.log[0].output == result


def test_odd_return_values_and_arguments_never_escape():
    class Unprintable:
        def __str__(self):
            raise ValueError("no text")

    tools = ToolExecutor()
    tools.register("Nothing", lambda text: None, "returns None")
    tools.register("Number", lambda text: 42, "returns an int")
    tools.register("Weird", lambda text: Unprintable(), "returns junk")
    tools.register("Echo", lambda text: text, "repeat")
    assert is_error(tools.run("Nothing", "x"))
    assert tools.run("Number", "x") == "42"
    assert is_error(tools.run("Weird", "x"))
    assert tools.run("Echo", None) == ""
    assert tools.run("Echo", Unprintable()) == "<unprintable Unprintable>"
    assert is_error(tools.run(None, "x"))
    assert [c.ok for c in tools.log] == [False, True, False, True, True, False]


def test_tool_errors_returned_as_text_are_logged_not_ok():
    tools = default_executor()
    tools.run("Calculate", "1/0")
    tools.run("Calculate", "2+2")
    tools.run("Search", "Atlantis")
    assert [(c.tool, c.output, c.ok) for c in tools.log] == [
        ("Calculate", "error: division by zero", False),
        ("Calculate", "4", True),
        ("Search", "No information about 'Atlantis' in the knowledge base.", True),
    ]
    assert all(c.latency_s >= 0 for c in tools.log)


def test_register_validates_and_replaces_case_insensitively():
    tools = ToolExecutor()
    with pytest.raises(ValueError):
        tools.register("two words", str, "bad name")
    with pytest.raises(TypeError):
        tools.register("Fine", "not callable", "bad func")
    tools.register("Search", lambda q: "old", "old")
    tools.register("search", lambda q: "new", "new")
    assert tools.names == ["search"] and tools.run("SEARCH", "q") == "new"


def test_default_executor_is_fresh_each_time():
    first, second = default_executor(), default_executor()
    assert first.names == ["Search", "Calculate"]
    first.run("Calculate", "1+1")
    assert len(first.log) == 1 and second.log == []


# --- the executor: sys.exit, Ctrl-C, a hanging tool, a huge output ----------------------


WHERE = {"no timeout": (None, False), "timed by an alarm": (5.0, False), "on a worker thread": (5.0, True)}


@pytest.mark.parametrize("where", WHERE)
def test_sys_exit_in_a_tool_is_an_error_observation_logged_not_ok(where):
    import sys

    timeout_s, elsewhere = WHERE[where]
    tools = ToolExecutor()
    tools.register("Quit", lambda text: sys.exit(4), "calls sys.exit", timeout_s=timeout_s)
    call = lambda: tools.run("Quit", "x")  # noqa: E731
    assert (on_another_thread(call) if elsewhere else call()) == "error: tool Quit failed: SystemExit: 4"
    assert [(c.tool, c.ok) for c in tools.log] == [("Quit", False)]


@pytest.mark.parametrize("where", WHERE)
def test_ctrl_c_in_a_tool_is_logged_then_stops_the_run(where):
    def interrupted(text):
        raise KeyboardInterrupt

    timeout_s, elsewhere = WHERE[where]
    tools = ToolExecutor()
    tools.register("Slow", interrupted, "interrupted by Ctrl-C", timeout_s=timeout_s)

    def call():
        try:
            tools.run("Slow", "x")
        except KeyboardInterrupt:
            return "raised"

    assert (on_another_thread(call) if elsewhere else call()) == "raised"
    assert [(c.tool, c.output, c.ok) for c in tools.log] == [
        ("Slow", "error: tool Slow was interrupted (KeyboardInterrupt)", False)]


needs_alarm = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="no SIGALRM timer here (Windows): "
                                 "every timed call goes to a worker thread")


def on_another_thread(job):
    """job() run on a thread that is not the main one (where no SIGALRM timer can be set); its result."""
    import threading

    box = {}
    thread = threading.Thread(target=lambda: box.update(result=job()))
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive()
    return box["result"]


@needs_alarm
def test_a_tool_runs_on_the_callers_thread_so_it_may_use_what_the_notebook_made():
    # A learner's tool over a sqlite3 connection made in a cell: sqlite3 refuses use from another
    # thread, so on a worker thread (before) this was an error observation.
    import sqlite3
    import threading

    db = sqlite3.connect(":memory:")
    db.execute("create table fact (name text, year int)")
    db.execute("insert into fact values ('Grace Hopper', 1906)")
    tools = ToolExecutor()
    tools.register("Lookup", lambda name: str(db.execute("select year from fact where name = ?", (name,)).fetchone()[0]),
                   "a fact's year")  # registered as a learner does: the default timeout
    tools.register("Where", lambda _: str(threading.get_ident()), "which thread runs the call")
    assert tools.tools["Lookup"].timeout_s == TOOL_TIMEOUT_S
    assert tools.run("Lookup", "Grace Hopper") == "1906"
    assert tools.run("Where", "") == str(threading.get_ident())
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # nothing left armed after the calls


@needs_alarm
def test_a_hanging_tool_is_stopped_at_its_timeout_and_logged():
    import threading

    release, unwound = threading.Event(), []

    def hang(text):
        try:
            return release.wait(30) and "late"
        finally:
            unwound.append(text)  # the call was interrupted, not left running

    tools = ToolExecutor()
    tools.register("Hang", hang, "never answers", timeout_s=0.3)
    tools.register("Echo", lambda text: text, "repeat", timeout_s=0.3)
    start = time.perf_counter()
    output = tools.run("Hang", "x")
    assert time.perf_counter() - start < 15  # a backstop: a call left hanging would take 30 s
    assert output == "error: tool Hang timed out after 0.3 s and was stopped"
    assert unwound == ["x"] and not release.is_set()
    assert tools.run("Echo", "next") == "next"
    assert [(c.tool, c.ok) for c in tools.log] == [("Hang", False), ("Echo", True)]
    assert 0.3 <= tools.log[0].latency_s < 3
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@needs_alarm
def test_a_tool_that_swallows_the_timeout_is_interrupted_again_until_it_stops(monkeypatch):
    from agentkit import tool_calls

    monkeypatch.setattr(tool_calls, "ALARM_REPEAT_S", 0.1)  # the next interruption comes sooner than a second
    tries = []

    def stubborn(text):
        while True:
            try:
                time.sleep(10)
            except BaseException:  # a bare `except:`, as careless code has: the first ToolTimeout is lost
                tries.append(1)
                if len(tries) == 2:
                    raise

    tools = ToolExecutor()
    tools.register("Stubborn", stubborn, "swallows the first interruption", timeout_s=0.2)
    start = time.perf_counter()
    assert tools.run("Stubborn", "x") == "error: tool Stubborn timed out after 0.2 s and was stopped"
    assert len(tries) == 2 and time.perf_counter() - start < 9  # a backstop: one missed re-raise sleeps 10 s more


def test_off_the_main_thread_a_hanging_tool_is_given_up_on_a_worker_thread():
    import threading

    release = threading.Event()
    tools = ToolExecutor()
    # It answers only when the test lets it go: no clock decides the outcome. (An executor that waited for it would
    # return only when the backstop lets it go, after 120 s, and fail.)
    tools.register("Hang", lambda text: release.wait() and "late", "never answers", timeout_s=0.3)
    tools.register("Echo", lambda text: text, "repeat", timeout_s=0.3)
    backstop = threading.Timer(120, release.set)
    backstop.start()
    try:
        output = on_another_thread(lambda: tools.run("Hang", "x"))
        assert not release.is_set()  # returned while the tool still hangs: it was given up, not waited for
        assert output == "error: tool Hang timed out after 0.3 s and was given up (it may still be running in the background)"
        assert on_another_thread(lambda: tools.run("Echo", "next")) == "next"  # a fresh worker: the stuck one is not waited for
        assert [(c.tool, c.ok) for c in tools.log] == [("Hang", False), ("Echo", True)]
        assert tools.log[0].latency_s >= 0.3  # it waited its limit (a lower bound: no machine is too fast)
    finally:
        release.set()
        backstop.cancel()


@needs_alarm
def test_someone_elses_sigalrm_handler_is_left_alone_and_the_call_goes_to_a_worker():
    import threading

    fired = []

    def theirs(*_):
        fired.append(1)

    previous = signal.signal(signal.SIGALRM, theirs)
    try:
        tools = ToolExecutor()
        tools.register("Where", lambda _: str(threading.get_ident()), "which thread runs the call", timeout_s=5)
        assert tools.run("Where", "") != str(threading.get_ident())
        assert signal.getsignal(signal.SIGALRM) is theirs and fired == []
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, previous)


@needs_alarm
def test_a_tool_inside_a_tool_is_timed_too_and_the_outer_deadline_holds():
    import threading

    release = threading.Event()
    inner = ToolExecutor()
    inner.register("Hang", lambda text: release.wait(30) and "late", "never answers", timeout_s=20)
    outer = ToolExecutor()
    outer.register("Agent", lambda text: inner.run("Hang", text), "a tool that runs another tool", timeout_s=0.3)
    try:
        start = time.perf_counter()
        assert outer.run("Agent", "x") == "error: tool Agent timed out after 0.3 s and was stopped"
        assert time.perf_counter() - start < 15  # backstop: the inner call (a worker's: the timer was taken) would hold it 20 s
    finally:
        release.set()


def test_an_executor_that_is_gone_leaves_no_thread_behind():
    import gc
    import threading

    before = set(threading.enumerate())
    tools = ToolExecutor()
    tools.register("Echo", lambda text: text, "repeat", timeout_s=5)
    assert on_another_thread(lambda: tools.run("Echo", "hi")) == "hi"
    [worker] = {t for t in threading.enumerate() if t.name == "agentkit-tool"} - before  # waits for the next call

    del tools
    gc.collect()
    worker.join(timeout=5)
    assert not worker.is_alive()


def test_a_50_mb_output_is_cut_with_a_line_saying_how_much():
    from agentkit.tools import MAX_OUTPUT_CHARS

    tools = ToolExecutor()
    tools.register("Flood", lambda text: "x" * 50_000_000, "floods")
    output = tools.run("Flood", "x")
    assert len(output) < MAX_OUTPUT_CHARS + 100 and output.startswith("x" * MAX_OUTPUT_CHARS)
    assert output.endswith(f"[output cut: the last {50_000_000 - MAX_OUTPUT_CHARS:,} of its 50,000,000 characters are not shown]")
    assert tools.log[0].output == output and tools.log[0].ok


def test_a_timeout_must_be_a_positive_number_or_none():
    for bad in (0, -1, float("nan"), "5"):
        with pytest.raises(ValueError, match="timeout_s must be a positive number"):
            ToolExecutor().register("T", str, "t", timeout_s=bad)


def test_the_tool_list_follows_a_changed_description():
    tools = default_executor()
    before = tools.describe()
    tools.tools["Search"].description = "look things up"  # a description that changes after the first prompt
    assert tools.describe() != before and "- Search[input]: look things up" in tools.describe()
