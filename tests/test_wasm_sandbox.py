"""The WebAssembly sandbox: every escape found in the process sandbox is tried here, and refused.

Each escape test takes `run` (the engine's `run_code`). With SANDBOX_UNDER_TEST=process the same
tests run against the process sandbox (`agentkit.sandbox`, guard on): there the tests of writes
outside, the planted cache, the secret, the name lookup, ctypes, the disk, the output, the deep value
and the limits fail, because those escapes get through. That is how we checked they test something.
"""
import contextlib
import gc
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentkit import wasm_disk, wasm_module, wasm_sandbox, wasm_worker
from agentkit.wasm_sandbox import MAX_OUTPUT_CHARS

# A busy machine can take longer than the 2 s default for a run that is not about time; the tests about
# the clock give their own timeout_s.
GENEROUS_S = 20


def run_code(code, expression=None, **limits):
    limits.setdefault("timeout_s", GENEROUS_S)
    return wasm_sandbox.run_code(code, expression, **limits)

SECRET = "sk-test-should-never-leak"


@pytest.fixture
def patient_backstop(monkeypatch):
    """The parent's backstop GENEROUS_S past the limit, so that only the run's own clock can stop a run near it."""
    monkeypatch.setattr(wasm_sandbox, "BACKSTOP_S", GENEROUS_S)


def stopped_by_its_own_clock(result, timeout_s):
    """Timed out by the run's clock: it waited its limit, and came back before the (patient) backstop could fire.

    No bound here is about speed: the lower one holds on any machine, the upper one tells two mechanisms apart
    GENEROUS_S apart (the watcher at the limit, the backstop GENEROUS_S later)."""
    return result.timed_out and timeout_s <= result.duration_s < timeout_s + GENEROUS_S


@pytest.fixture(scope="session")
def engine():
    """Compile (or load from the cache) once per test process: every test below reuses it."""
    return wasm_module.engine_and_module()[0]


@pytest.fixture
def run(engine):
    if os.environ.get("SANDBOX_UNDER_TEST") == "process":
        from agentkit import sandbox

        def run_in_process(code, expression=None, max_disk_mb=16, **limits):
            limits.setdefault("timeout_s", GENEROUS_S)
            return sandbox.run_code(code, expression, max_file_mb=max_disk_mb, **limits)
        return run_in_process
    return run_code


@pytest.fixture
def outside():
    """A folder of ours the code must not touch, reachable and writable by anyone (as a normal user's
    own files are to code running as that user), so only the sandbox can stop a write or a read."""
    folder = Path(tempfile.mkdtemp(prefix="agentkit-outside-"))
    os.chmod(folder, 0o777)
    (folder / "keep.txt").write_text("keep")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


# --- the contract -----------------------------------------------------------------


def test_value_output_and_fields_come_back(run):
    result = run("print('hello')\nx = 6 * 7", "x")
    assert (result.ok, result.value, result.output, result.error, result.timed_out) == (True, 42, "hello\n", None, False)
    assert result.duration_s > 0
    assert result.summary() == "ok: value=42, output='hello'"


@pytest.mark.parametrize("code, expression, error", [
    ("def f(:", None, "SyntaxError"),
    ("1 / 0", None, "ZeroDivisionError: division by zero"),
    ("s = {1}", "s", "the value is not JSON-serialisable"),
    ("import sys\nsys.exit(3)", None, "SystemExit: 3"),
    ("class Oops(Exception):\n    __module__ = 'lib'\nraise Oops()", None, "lib.Oops"),  # as traceback names it
])
def test_ordinary_failures_are_clear_errors(run, code, expression, error):
    result = run(code, expression)
    assert result.error.startswith(error) and not result.timed_out


def test_the_folder_is_fresh_each_run_and_removed():
    first = run_code("open('mine.txt', 'w').write('x')\nimport os", "[os.getcwd(), os.listdir('.')]")
    second = run_code("import os", "os.listdir('.')")
    assert first.value == ["/sandbox", ["mine.txt"]] and second.value == []


# --- writing outside the folder ------------------------------------------------------

WRITES_OUTSIDE = {
    "absolute path": "open({target!r}, 'w').write('x')",
    "chdir then relative": "import os\nos.chdir({folder!r})\nopen('escape.txt', 'w').write('x')",
    "dir_fd": "import os\nfd = os.open({folder!r}, os.O_RDONLY)\nos.close(os.open('escape.txt', os.O_WRONLY | os.O_CREAT, dir_fd=fd))",
    "rmtree after chdir": "import os, shutil\nos.chdir({parent!r})\nshutil.rmtree({name!r})",
    "parent of the folder": "open('../escape.txt', 'w').write('x')\nopen('../../escape.txt', 'w').write('x')",
}


def test_writing_outside_the_folder_is_refused(run, outside):
    target = outside / "escape.txt"
    attempts = {how: code.format(target=str(target), folder=str(outside), parent=str(outside.parent), name=outside.name)
                for how, code in WRITES_OUTSIDE.items()}
    code = "import os\nrefused = {}\nhere = os.getcwd()\n" + "".join(
        f"try:\n    exec({code!r})\nexcept OSError as e:\n    refused[{how!r}] = type(e).__name__\nos.chdir(here)\n"
        for how, code in attempts.items())
    result = run(code, "refused")
    assert result.ok and set(result.value) == set(WRITES_OUTSIDE), result
    assert not target.exists() and (outside / "keep.txt").read_text() == "keep"


def test_the_standard_library_is_read_only():
    stdlib = wasm_module.runtime_dir() / wasm_module.PYTHON_STDLIB / "python311.zip"
    before = stdlib.read_bytes()
    attempts = ["open(ZIP, 'r+b').write(b'X')", "open(ZIP, 'ab').write(b'X')", "os.truncate(ZIP, 10)",
                "os.close(os.open(ZIP, os.O_WRONLY | os.O_TRUNC))", "os.rename(ZIP, '/sandbox/x.zip')",
                "os.link(ZIP, '/sandbox/x.zip')", "os.mkdir('/usr/local/lib/new')"]
    code = "import os\nZIP = '/usr/local/lib/python311.zip'\ndone = []\n" + "".join(
        f"try:\n    {a}\n    done.append({a!r})\nexcept OSError:\n    pass\n" for a in attempts)
    result = run_code(code, "done")
    assert result.ok and result.value == [], result
    assert stdlib.read_bytes() == before


def test_the_users_cache_cannot_be_planted(run, outside):
    home = outside / "home"
    (home / ".cache" / "agentkit").mkdir(parents=True)
    for folder in (home, home / ".cache", home / ".cache" / "agentkit"):
        os.chmod(folder, 0o777)
    code = f"import os\nos.chdir({str(home / '.cache' / 'agentkit')!r})\nopen('planted.pickle', 'wb').write(b'x')"
    run(code)
    assert not (home / ".cache" / "agentkit" / "planted.pickle").exists()


# --- the secret stays ours ----------------------------------------------------------


def test_no_secret_reaches_the_code(run, outside, monkeypatch):
    monkeypatch.setenv("LLM_API_KEY", SECRET)
    dotenv = outside / ".env"
    dotenv.write_text(f"LLM_API_KEY={SECRET}\n")
    os.chmod(dotenv, 0o644)
    code = f"""
import os
found = [os.environ.get('LLM_API_KEY', '')]
for path in ({f'/proc/{os.getpid()}/environ'!r}, {str(dotenv)!r}):
    try:
        found.append(open(path, errors='replace').read())
    except OSError as e:
        found.append(type(e).__name__)
"""
    result = run(code, "found")
    assert result.ok, result
    assert SECRET not in json.dumps(result.value) and SECRET not in result.output


def test_no_name_lookup_no_socket_and_nothing_arrives(run):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as listener:
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        code = f"""
import socket
tried = {{}}
for name, attempt in [("getaddrinfo", lambda: socket.getaddrinfo("localhost", 53)),
                      ("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"leak", ("127.0.0.1", {port}))),
                      ("tcp", lambda: socket.create_connection(("127.0.0.1", {port}), 1))]:
    try:
        attempt()
        tried[name] = "done"
    except Exception as e:
        tried[name] = type(e).__name__
"""
        result = run(code, "tried")
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.recv(100)
    assert result.ok and "done" not in result.value.values(), result.value


# --- the report comes back through our own file, never through a name the code chose ----------


def _link_to(target: Path) -> str:
    """A relative link target from the run's /report folder up to the root and down to `target`."""
    return "../" * 40 + str(target).lstrip("/")


def test_links_planted_in_the_report_folder_are_never_followed(outside):
    settings = outside / "settings.json"  # any file of ours the code can name: a config, a .env, /proc/self/environ
    settings.write_text(json.dumps({"LLM_API_KEY": SECRET}))
    code = ("import os\n" + "".join(f"try:\n    os.unlink('/report/{name}')\nexcept OSError:\n    pass\n"
                                    f"os.symlink({_link_to(settings)!r}, '/report/{name}')\n"
                                    for name in ["report", "value.json", "error.txt"])
            + "open('/report/done', 'w').close()\nos._exit(0)")
    result = run_code(code)
    assert SECRET not in json.dumps([result.value, result.error, result.output, result.stderr]), result
    assert result.error == "the code ended without a report"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_a_report_link_to_a_fifo_does_not_hold_us(outside):
    fifo = outside / "fifo"
    os.mkfifo(fifo)
    code = ("import os\n" + "".join(f"try:\n    os.unlink('/report/{n}')\nexcept OSError:\n    pass\n"
                                    f"os.symlink({_link_to(fifo)!r}, '/report/{n}')\n"
                                    for n in ["report", "value.json", "error.txt"])
            + "open('/report/done', 'w').close()")
    results = []
    runner = threading.Thread(target=lambda: results.append(run_code(code)), daemon=True)
    runner.start()
    runner.join(GENEROUS_S)
    if runner.is_alive():
        for _ in range(10):  # held by the FIFO: a writer that opens and closes it lets one reader go
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            runner.join(1)
        pytest.fail("the host opened the FIFO the code linked to, and waited on it")
    assert results[0].ok  # the runner's report came back through our own descriptor


def test_the_code_may_write_its_own_report_which_is_only_data():
    forged = "open('/report/report', 'w').write('[null, {\"claim\": \"all tests pass\"}]')\nimport os\nos._exit(0)"
    assert run_code(forged).value == {"claim": "all tests pass"}  # what the code could have returned anyway
    assert run_code("open('/report/report', 'w').write('[1, 2]')\nimport os\nos._exit(0)").error == (
        "the report is not in the runner's form")


# --- no native code, no process ----------------------------------------


def test_no_native_code(run):
    assert not run("import ctypes\nctypes.pythonapi").ok


def test_no_process_and_no_signal(run):
    attempts = ["import os\nos.system('echo hacked')", "import subprocess\nsubprocess.run(['echo', 'hacked'])",
                "import os\nos.fork()", "import os\nos.kill(os.getppid(), 0)"]
    code = "done = []\n" + "".join(f"try:\n    exec({a!r})\n    done.append({a!r})\nexcept Exception:\n    pass\n"
                                   for a in attempts)
    result = run(code, "done")
    assert result.ok and result.value == [] and "hacked" not in result.output, result


def test_a_thread_is_a_clear_error_not_a_hang():
    # WASI preview 1 has no threads: starting one fails at once, and the run reports it.
    result = run_code("import threading\nthreading.Thread(target=print).start()")
    assert result.error == "RuntimeError: can't start new thread" and not result.timed_out


# --- limits: time, memory, disk, output -------------------------------------------------


def test_infinite_loop_is_stopped_by_the_clock(run, patient_backstop):
    result = run("while True:\n    pass", timeout_s=0.2)  # the loop burns a core until the limit: keep it short
    assert result.timed_out and result.error.startswith("timed out")
    assert stopped_by_its_own_clock(result, 0.2)


@pytest.mark.parametrize("sleep", ["import time\ntime.sleep(30)", "import select\nselect.select([], [], [], 30)"])
def test_a_sleeper_ends_at_its_limit_with_everything_it_held(sleep, patient_backstop, monkeypatch):
    # A sleep is a call into the engine that no interrupt reaches: once abandoned, it kept its thread,
    # its memory and its files until the sleep ended (three such runs held 459 MB).
    hoard = "hoard = bytearray(32 * 2**20)\nkeep = open('kept.txt', 'w')\n"
    replies = []
    real_run = wasm_sandbox._Worker.run
    monkeypatch.setattr(wasm_sandbox._Worker, "run", lambda self, job, patience: replies.append(
        real_run(self, job, patience)) or replies[-1])
    # The code must reach its sleep before its limit, and the interpreter's start alone can take longer than 0.3 s
    # on a loaded machine: then the clock interrupts it before the sleep, as it should, and nothing here is
    # checked. So the limit grows until a run is caught asleep (the first, on a quiet machine).
    for timeout_s in (0.3, 1.0, 3.0, 9.0):
        worker = wasm_sandbox._running_worker()
        result = run_code(hoard + sleep, timeout_s=timeout_s)
        assert stopped_by_its_own_clock(result, timeout_s)
        if replies[-1].get("stuck"):
            break
    else:
        pytest.fail(f"the code never reached its sleep within {timeout_s} s: nothing was checked")
    assert [t.name for t in threading.enumerate() if t.name == "agentkit-wasm-run"] == []
    # The process it slept in has ended, with all it held: run_code waits for its exit (and kills it if it lingers
    # past a second), so no clock of the test's own decides this.
    assert worker.process.returncode is not None and wasm_sandbox._worker is worker
    assert run_code("x = 1", "x").value == 1 and wasm_sandbox._worker is not worker  # the next run gets a new one


def _during_a_run(act, **limits):
    """The result of a busy run, with `act(worker_process)` done to its worker while it runs."""
    run_code("x = 1")  # a worker is up
    results = []
    runner = threading.Thread(target=lambda: results.append(run_code("while True:\n    pass", **limits)))
    runner.start()
    time.sleep(0.1)
    act(wasm_sandbox._worker.process)
    runner.join()
    return results[0]


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="freezes the worker with SIGSTOP")
def test_a_worker_that_does_not_answer_is_killed_at_the_backstop(monkeypatch):
    monkeypatch.setattr(wasm_sandbox, "BACKSTOP_S", 0.2)
    result = _during_a_run(lambda worker: worker.send_signal(signal.SIGSTOP), timeout_s=0.3)
    assert result.timed_out and result.duration_s >= 0.3 + 0.2  # a stopped worker never answers: the backstop did
    assert run_code("x = 1", "x").value == 1


def test_a_worker_that_dies_is_a_clear_error_and_replaced():
    result = _during_a_run(lambda worker: worker.kill(), timeout_s=GENEROUS_S)
    assert result.error.startswith("the engine's worker process ended during the run") and not result.timed_out
    assert run_code("x = 1", "x").value == 1


def test_a_walk_that_outlasts_the_deadline_stops_the_run(tmp_path):
    # The watcher looked at the clock only between walks, and a walk by paths through a chain of 1,990 folders
    # with 7,000 files at its bottom took a second: it now looks at every entry (and walks by descriptors).
    for i in range(50):
        (tmp_path / f"f{i}").write_text("x")
    with pytest.raises(wasm_disk.TimeUp):
        wasm_disk.usage([tmp_path], 2**30, 10**6, deadline=time.monotonic() - 1)


def test_memory_bomb_is_a_memory_error(run):
    result = run("hoard = []\nwhile True:\n    hoard.append(bytearray(10**7))", timeout_s=10, memory_mb=64)
    assert result.error == "MemoryError" and not result.timed_out


def test_disk_fill_is_stopped(run, tmp_path):
    code = "i = 0\nwhile True:\n    open(f'f{i}', 'wb').write(b'x' * 15 * 2**20)\n    i += 1"
    result = run(code, timeout_s=10, max_disk_mb=16)
    assert not result.timed_out and "disk limit" in result.error


# A chain of folders built through descriptors, as deep as the code likes, then `then` run at its bottom (fd).
CHAIN = """import os
fd = os.open('.', os.O_RDONLY)
for _ in range({depth}):
    os.mkdir({name}, dir_fd=fd)
    inner = os.open({name}, os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = inner
{then}"""
WRITE_12_MB_HERE = ("out = os.open('big', os.O_WRONLY | os.O_CREAT, dir_fd=fd)\n"
                    "for _ in range(12):\n    os.write(out, b'x' * 2**20)\n")


@pytest.mark.skipif(os.mkdir not in os.supports_dir_fd, reason="needs dir_fd")
def test_folders_nested_past_the_longest_path_still_count():
    # 50 levels of 100-letter names: a path of 5,050 characters, past PATH_MAX (4,096 on Linux).
    result = run_code(CHAIN.format(depth=50, name="'d' * 100", then=WRITE_12_MB_HERE), max_disk_mb=4)
    assert result.error == "disk limit exceeded: the folder grew past 4 MB", result


@pytest.mark.skipif(os.mkdir not in os.supports_dir_fd, reason="needs dir_fd")
def test_folders_nested_deeper_than_the_limit_are_stopped():
    from agentkit.wasm_disk import MAX_DEPTH

    result = run_code(CHAIN.format(depth=MAX_DEPTH + 1, name="'d'", then=""))
    assert result.error == f"disk limit exceeded: folders nested more than {MAX_DEPTH} deep", result
    assert run_code(CHAIN.format(depth=MAX_DEPTH, name="'d'", then="")).ok


@pytest.mark.skipif(not os.path.isdir("/dev/fd"), reason="open files are counted through /dev/fd (Linux, macOS)")
def test_a_file_removed_while_open_still_counts():
    code = "import os\nkept = open('big', 'wb')\nos.unlink('big')\nfor _ in range(12):\n    kept.write(b'x' * 2**20)\n"
    result = run_code(code, max_disk_mb=4)
    assert result.error == "disk limit exceeded: the folder grew past 4 MB", result
    # What the engine itself holds that way (its memory image, 3.4 MB here) is not the code's to pay for.
    assert run_code(code.replace("range(12)", "range(3)"), max_disk_mb=4).ok


def test_a_file_grown_as_the_run_ends_still_counts():
    # 12 MB at once (a sparse file counts in full), microseconds before the end: only a last look sees it.
    result = run_code("open('big', 'wb').truncate(12 * 2**20)\nimport os\nos._exit(0)", max_disk_mb=4)
    assert result.error == "disk limit exceeded: the folder grew past 4 MB", result


def test_what_cannot_be_measured_stops_the_run(tmp_path, monkeypatch):
    def unreadable(*_):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(wasm_worker, "usage", unreadable)
    run = wasm_worker._Run.__new__(wasm_worker._Run)  # the watcher's part alone, without a store
    run.engine, run.folders, run.held_before = SimpleNamespace(increment_epoch=list), [tmp_path], frozenset()
    run.stop_reason, run.detail, run.job = None, "", {"max_disk_bytes": 2**20, "max_entries": 10}
    run._check_disk(None)
    assert (run.stop_reason, run.detail) == ("unmeasured", "Permission denied")


def test_many_files_are_stopped_and_removed(monkeypatch, tmp_path):
    monkeypatch.setattr(wasm_sandbox, "MAX_ENTRIES", 300)  # the same check as at 10,000, sooner
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the run's folder goes here, so we see it go
    result = run_code("i = 0\nwhile True:\n    open(f'f{i}', 'w').close()\n    i += 1", timeout_s=30)
    assert result.error == "disk limit exceeded: more than 300 files and folders" and not result.timed_out
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.mkdir not in os.supports_dir_fd, reason="builds the chain with dir_fd")
def test_a_folder_nested_deeper_than_the_recursion_limit_is_removed(tmp_path):
    root = tmp_path / "run"
    root.mkdir()
    fd = os.open(root, os.O_RDONLY)
    for _ in range(120):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    previous = sys.getrecursionlimit()
    # Garbage from earlier tests is finalized now, not by a collection that starts deep in rmtree's recursion,
    # where a finalizer would hit the lowered limit (seen once on 3.12: 12 unraisable RecursionErrors).
    gc.collect()
    gc.disable()
    sys.setrecursionlimit(len(traceback.extract_stack()) + 60)  # lower than the chain is deep: a quick test
    try:
        if sys.version_info < (3, 13):  # 3.13 made rmtree iterative
            with pytest.raises(RecursionError):
                shutil.rmtree(root)  # recurses once per level: it failed on a run's deep folders
        wasm_disk.remove_tree(root)
    finally:
        sys.setrecursionlimit(previous)
        gc.enable()
    assert not root.exists()


def test_output_flood_is_stopped_and_truncated(run):
    result = run("while True:\n    print('x' * 1000)", timeout_s=10)
    assert not result.timed_out and "output limit" in result.error
    assert len(result.output) <= MAX_OUTPUT_CHARS + 30


# --- a deep report and bad limits are clear errors ------------------------------


def test_a_deeply_nested_value_is_a_clear_error(run):
    result = run("x = []\nfor _ in range(5_000):\n    x = [x]", "x", timeout_s=10)
    assert result.error == "the value is nested too deeply to report"


def test_a_forged_deep_report_is_a_clear_error():
    code = "open('/report/report', 'w').write('[null, ' + '[' * 100_000 + ']' * 100_000 + ']')\nimport os\nos._exit(0)"
    assert run_code(code).error == "the report is nested too deeply to read"


@pytest.mark.parametrize("limit", [{"memory_mb": -1}, {"memory_mb": 0}, {"timeout_s": 0}, {"timeout_s": -1},
                                   {"max_disk_mb": -1}, {"timeout_s": float("inf")}, {"memory_mb": 8}])
def test_limits_that_are_no_limit_are_refused(run, limit):
    with pytest.raises(ValueError):
        run("print(1)", **limit)


def test_bad_arguments_raise_at_once():
    with pytest.raises(TypeError):
        run_code(b"print(1)")


# --- the compiled module's cache --------------------------------------------------------


class Compiled(Exception):
    """Raised instead of compiling: the cache was not used."""


@pytest.fixture
def cache_copy(engine, tmp_path, monkeypatch):
    for path in wasm_module.cache_paths(wasm_module.cache_dir()):
        shutil.copy(path, tmp_path / path.name)

    def refuse(*_):
        raise Compiled
    monkeypatch.setattr(wasm_module, "compile_module", refuse)
    return tmp_path


def test_the_compiled_module_is_loaded_from_the_cache(engine, cache_copy):
    assert wasm_module.load_module(engine, cache_copy) is not None  # no compile


def test_an_altered_cache_file_is_never_loaded(engine, cache_copy):
    compiled, _ = wasm_module.cache_paths(cache_copy)
    data = bytearray(compiled.read_bytes())
    data[len(data) // 2] ^= 0xFF
    compiled.write_bytes(bytes(data))
    with pytest.raises(Compiled):
        wasm_module.load_module(engine, cache_copy)


def test_an_interpreter_or_standard_library_with_another_sha256_is_refused(engine, cache_copy, monkeypatch):
    monkeypatch.setattr(wasm_module, "STDLIB_ZIP_SHA256", "0" * 64)
    with pytest.raises(RuntimeError, match="python311.zip"):
        wasm_module.stdlib_folder()
    monkeypatch.undo()
    monkeypatch.setattr(wasm_module, "compile_module", lambda *_: pytest.fail("compiled"))
    monkeypatch.setattr(wasm_module, "PYTHON_WASM_SHA256", "0" * 64)  # also names a cache entry that is not there
    with pytest.raises(RuntimeError, match="python-3.11.1.wasm"):
        wasm_module.load_module(engine, cache_copy)  # refused before compiling


@pytest.fixture
def new_worker():
    """The next run starts a worker of its own, which checks the standard library as it starts."""
    wasm_sandbox._stop_worker()
    wasm_sandbox._worker = None
    yield
    wasm_sandbox._stop_worker()
    wasm_sandbox._worker = None


def test_a_file_planted_beside_the_standard_library_stops_the_engine(tmp_path, monkeypatch, new_worker):
    stdlib = tmp_path / wasm_module.PYTHON_STDLIB
    (stdlib / "python3.11").mkdir(parents=True)
    shutil.copy(wasm_module.runtime_dir() / wasm_module.PYTHON_STDLIB / "python311.zip", stdlib)
    (stdlib / "python3.11" / "sitecustomize.py").write_text("print('planted, and run in every run')")
    monkeypatch.setattr(wasm_module, "runtime_dir", lambda: tmp_path)
    with pytest.raises(RuntimeError, match="python3.11, which the WebAssembly interpreter would load"):
        result = run_code("x = 1", "x")
        pytest.fail(f"the run went ahead: {result}")


@pytest.mark.parametrize("loosen", ["folder: others write", "folder: group writes", "module: others write",
                                    "hash: group writes", "module: a link"])
def test_a_cache_others_could_have_written_is_never_loaded(engine, cache_copy, loosen):
    compiled, digest = wasm_module.cache_paths(cache_copy)
    if loosen == "module: a link":
        compiled.rename(cache_copy.parent / "elsewhere.cwasm")
        compiled.symlink_to(cache_copy.parent / "elsewhere.cwasm")
    else:
        path = {"folder": cache_copy, "module": compiled, "hash": digest}[loosen.split(":")[0]]
        os.chmod(path, path.stat().st_mode | (0o002 if "others" in loosen else 0o020))
    with pytest.raises(Compiled), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wasm_module.load_module(engine, cache_copy)


@pytest.mark.skipif(not hasattr(os, "chown") or os.geteuid() != 0, reason="only root can give a file away")
def test_a_cache_owned_by_someone_else_is_never_loaded(engine, cache_copy):
    for path in (cache_copy, *wasm_module.cache_paths(cache_copy)):
        os.chown(path, 4242, 4242)
    with pytest.raises(Compiled), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wasm_module.load_module(engine, cache_copy)


def test_a_cache_others_may_write_is_compiled_in_memory_and_left_alone(engine, cache_copy, monkeypatch):
    compiled_module = wasm_module.engine_and_module()[1]
    compiles = []
    monkeypatch.setattr(wasm_module, "compile_module", lambda *_: compiles.append(1) or compiled_module)
    os.chmod(cache_copy, 0o777)
    before = sorted((p.name, p.stat().st_mtime_ns) for p in cache_copy.iterdir())
    with pytest.warns(UserWarning, match="not yours alone"):
        assert wasm_module.load_module(engine, cache_copy) is compiled_module
    assert compiles == [1] and sorted((p.name, p.stat().st_mtime_ns) for p in cache_copy.iterdir()) == before


def test_runs_from_two_threads_take_turns():
    results = []
    threads = [threading.Thread(target=lambda: results.append(run_code("x = 1", "x"))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.value for r in results] == [1, 1]


def test_a_missing_cache_is_compiled_once_written_and_old_entries_go(engine, tmp_path, monkeypatch):
    compiled_module = wasm_module.engine_and_module()[1]
    compiles = []
    monkeypatch.setattr(wasm_module, "compile_module", lambda *_: compiles.append(1) or compiled_module)
    (tmp_path / "python-0000-wasmtime-1.0.0-x86_64.cwasm").write_bytes(b"from an older wasmtime")
    wasm_module.load_module(engine, tmp_path)
    wasm_module.load_module(engine, tmp_path)
    assert compiles == [1]
    assert sorted(tmp_path.iterdir()) == sorted(wasm_module.cache_paths(tmp_path))
