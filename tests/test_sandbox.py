"""The sandbox: hostile programs come back as clear results within the limits, and we are unharmed.

Limits are tight (1-3 s, 128 MB) so the file runs in a few seconds. The time bounds asserted
here are the sandbox's own limits plus a margin for process start-up on a loaded machine.
"""
import os
import resource
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time

import pytest

from agentkit import sandbox
from agentkit.sandbox import MAX_OUTPUT_CHARS, run_code

# A run's clock is a backstop wherever the test is about another limit: generous, so a loaded machine never turns
# a memory error or a refused fork into a timeout. Where the clock is what is tested, `timed_out` says the wall
# clock stopped the run (the CPU limit and the supervisor's own backstop report otherwise), and its duration is
# bounded below only: no bound here depends on the machine's speed.
GENEROUS_S = 30


def group_members(pgid):
    """Every process (zombies too) still in the sandbox's process group, read from /proc."""
    members = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[2]) == pgid:
                    members.append(int(entry))
        except (OSError, IndexError):
            pass
    return members


def can_bound_process_count():
    """RLIMIT_NPROC never binds root; the sandbox then needs an unprivileged user to run as."""
    return os.geteuid() != 0 or sandbox._run_as() is not None


def test_value_and_output_come_back():
    result = run_code("print('hello')\nx = 6 * 7", "x")
    assert result.ok and result.value == 42 and result.output == "hello\n"
    assert not result.timed_out and result.exit_code == 0


def test_environment_has_no_secrets_and_cwd_is_fresh_and_removed(monkeypatch):
    monkeypatch.setenv("LLM_API_KEY", "sk-should-never-leak")
    code = "import os\nopen('mine.txt', 'w').write('x')"
    first = run_code(code, "[sorted(os.environ), os.getcwd(), os.listdir('.')]")
    second = run_code(code, "os.getcwd()")
    names, cwd, listing = first.value
    assert "LLM_API_KEY" not in names and not any("KEY" in n or "TOKEN" in n for n in names)
    assert listing == ["mine.txt"]  # only what the code itself wrote
    assert cwd != second.value and cwd != os.getcwd()
    assert not os.path.exists(cwd) and not os.path.exists(second.value)


def test_the_child_runs_under_the_requested_limits():
    # The CPU limit is a backstop the wall clock beats, so it is checked here rather than by a run.
    wanted = {"CPU": GENEROUS_S + 1, "AS": 128 * 2**20, "NPROC": 8, "FSIZE": 2**20, "CORE": 0}
    expression = (f"[resource.getrlimit(getattr(resource, 'RLIMIT_' + name)) for name in {list(wanted)}]"
                  " + ['NoNewPrivs:\\t1' in open('/proc/self/status').read() if os.path.exists('/proc') else False]")
    result = run_code("import os, resource", expression, timeout_s=GENEROUS_S, memory_mb=128, max_processes=8,
                      max_file_mb=1)
    got = dict(zip(wanted, result.value[:-1]))
    assert result.value[-1] == sys.platform.startswith("linux")  # set-uid programs gain no privileges
    # At most what was asked (lower if our own hard limit is lower), and never unlimited (-1).
    assert all(0 < got[name][0] <= wanted[name] for name in ("CPU", "AS", "NPROC", "FSIZE"))
    assert got["CORE"] == [0, 0]  # no core dumps, and the code cannot raise that limit again


def test_infinite_loop_is_stopped_by_the_wall_clock():
    result = run_code("while True:\n    pass", timeout_s=0.2)  # the loop burns a core until the limit: keep it short
    assert result.timed_out and "timed out" in result.error
    assert result.duration_s >= 0.2
    assert group_members(result.pid) == []


def test_memory_bomb_is_a_memory_error():
    result = run_code("hoard = []\nwhile True:\n    hoard.append(bytearray(10**7))", timeout_s=GENEROUS_S, memory_mb=128)
    assert not result.timed_out
    assert result.error == "MemoryError"


def test_one_huge_allocation_fails_at_once_and_our_process_limits_are_untouched():
    before = [resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_NPROC)]
    result = run_code("x = bytearray(10**10)", memory_mb=128, timeout_s=GENEROUS_S)
    after = [resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_NPROC)]
    assert result.error == "MemoryError" and not result.timed_out
    assert before == after


def test_fork_bomb_is_refused_by_the_guard():
    result = run_code("import os\nwhile True:\n    os.fork()", timeout_s=GENEROUS_S)
    assert result.error.startswith("PermissionError: sandbox guard: os.fork")
    assert group_members(result.pid) == []


@pytest.mark.skipif(not can_bound_process_count(), reason="root without an unprivileged interpreter")
def test_fork_bomb_without_the_guard_is_bounded_by_the_process_limit():
    result = run_code("import os\nwhile True:\n    os.fork()", timeout_s=GENEROUS_S, max_processes=8, guard=False)
    assert not result.timed_out
    assert result.error.startswith("BlockingIOError")
    assert result.survivors == 0 and group_members(result.pid) == []


@pytest.mark.skipif(not can_bound_process_count(), reason="root without an unprivileged interpreter")
def test_stubborn_fork_bomb_is_killed_with_its_whole_group():
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    result = run_code(code, timeout_s=0.25, max_processes=8, guard=False)  # 8 spinning processes: keep it short
    assert result.timed_out and result.duration_s >= 0.25
    assert result.survivors == 0 and group_members(result.pid) == []


@pytest.mark.parametrize("code", [
    "import os\nos.system('echo hacked')",
    "import subprocess\nsubprocess.run(['echo', 'hacked'])",
])
def test_shell_and_subprocess_are_refused(code):
    result = run_code(code)
    assert result.error.startswith("PermissionError: sandbox guard:")
    assert "hacked" not in result.output


def test_writing_outside_its_directory_is_refused(tmp_path):
    target = tmp_path / "escape.txt"
    (tmp_path / "keep.txt").write_text("keep")
    attempts = {
        "absolute path": f"open({str(target)!r}, 'w').write('x')",
        "parent folder": "open('../escape.txt', 'w').write('x')",
        "remove": f"import os\nos.remove({str(tmp_path / 'keep.txt')!r})",
        "replace": f"open('mine.txt', 'w').write('x')\nimport os\nos.replace('mine.txt', {str(target)!r})",
    }
    # One run tries them all (each run starts a supervisor and a child): each must be refused by the guard.
    code = "refused = {}\n" + "".join(
        f"try:\n    exec({attempt!r})\nexcept OSError as e:\n    refused[{how!r}] = f'{{type(e).__name__}}: {{e}}'\n"
        for how, attempt in attempts.items())
    result = run_code(code, "refused")
    assert result.ok and set(result.value) == set(attempts), result
    for how, error in result.value.items():
        assert "writing outside" in error or "outside the working directory" in error, (how, error)
    assert not target.exists() and (tmp_path / "keep.txt").exists()


def test_writing_inside_and_reading_anywhere_are_allowed():
    result = run_code("open('a.txt', 'w').write('hi')\nimport os", "[open('a.txt').read(), len(os.listdir('/')) > 0]")
    assert result.ok and result.value == ["hi", True]


def test_output_flood_hits_the_file_size_limit_and_is_truncated():
    result = run_code("while True:\n    print('x' * 1000)", timeout_s=GENEROUS_S, max_file_mb=1)
    assert not result.timed_out and "File too large" in result.error
    assert len(result.output) <= MAX_OUTPUT_CHARS + 30


@pytest.mark.parametrize("code, expression, error", [
    ("def f(:", None, "SyntaxError"),
    ("1 / 0", None, "ZeroDivisionError: division by zero"),
    ("s = {1}", "s", "the value is not JSON-serialisable"),
    ("import sys\nsys.exit(3)", None, "SystemExit: 3"),
])
def test_ordinary_failures_are_clear_errors(code, expression, error):
    result = run_code(code, expression)
    assert result.error.startswith(error) and not result.timed_out


def test_bad_arguments_raise_at_once():
    with pytest.raises(TypeError):
        run_code(b"print(1)")


# --- nothing the code starts outlives run_code --------------------------------
# Each escape prints "escapee <how> <pid>" only once its process has left the child's process
# group or session (a pipe says so), so the check by pid below is about a real escapee.

ESCAPES = {
    "fork+setsid": """
import os, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.setsid()
    os.write(w, b"x")
    time.sleep(60)
    os._exit(0)
os.read(r, 1)
print("escapee fork+setsid", pid, flush=True)
""",
    "fork+setpgid": """
import os, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.write(w, b"x")
    time.sleep(60)
    os._exit(0)
os.read(r, 1)
print("escapee fork+setpgid", pid, flush=True)
""",
    "double fork": """
import os, time
r, w = os.pipe()
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        os.write(w, str(os.getpid()).encode().ljust(16))
        time.sleep(60)
    os._exit(0)
print("escapee double-fork", int(os.read(r, 16)), flush=True)
""",
    "Popen after replacing sys.audit": """
import subprocess, sys
sys.audit = lambda *args: None
proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
print("escapee popen", proc.pid, flush=True)
""",
    "fork_exec directly": """
import multiprocessing.util, os, sys
r, w = os.pipe()
child = "import os, time; os.setsid(); os.write(%d, b'x'); time.sleep(60)" % w
python = os.fsencode(sys.executable)
pid = multiprocessing.util.spawnv_passfds(python, [python, b"-c", child.encode()], (w,))
os.read(r, 1)
print("escapee fork_exec", pid, flush=True)
""",
}
GUARD_BLIND_ESCAPES = ("Popen after replacing sys.audit", "fork_exec directly")


def alive(pid):
    """True while `pid` runs (a zombie is dead, it only waits to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def escapees(output):
    return {line.split()[1]: int(line.split()[2]) for line in output.splitlines() if line.startswith("escapee ")}


def check_none_survived(result, expected, timed_out=False):
    found = escapees(result.output)
    try:
        assert result.timed_out == timed_out and (timed_out or result.ok), result
        assert len(found) == expected, f"not every escape was made, so this checks nothing: {result}"
        still_running = {how: pid for how, pid in found.items() if alive(pid)}
        assert result.survivors == len(still_running), "survivors must count what really runs"
        assert still_running == {}, f"outlived run_code: {still_running}"
    finally:
        for pid in found.values():  # never leave a test's escapee behind, whatever happened
            try:
                os.kill(pid, 9)
            except OSError:
                pass


@pytest.mark.parametrize("guard", [True, False], ids=["guard on", "guard off"])
def test_nothing_the_code_starts_outlives_it_when_it_ends(guard):
    names = GUARD_BLIND_ESCAPES if guard else list(ESCAPES)
    result = run_code("\n".join(ESCAPES[name] for name in names), guard=guard, timeout_s=GENEROUS_S)
    check_none_survived(result, len(names))


def test_nothing_the_code_starts_outlives_it_when_it_times_out():
    # It waits out its clock asleep: a busy loop would time out the same way, burning a core meanwhile.
    # Every escape must be made before the clock ends the run, which takes longer on a loaded machine (0.15-0.22 s
    # at a load average of 11 against a 0.5 s limit): the limit grows until they all are (the first, mostly).
    code = "\n".join(ESCAPES.values()) + "\nimport time\ntime.sleep(60)"
    for timeout_s in (0.5, 2, 8):
        result = run_code(code, guard=False, timeout_s=timeout_s)
        if len(escapees(result.output)) == len(ESCAPES):
            break
        check_none_survived(result, len(escapees(result.output)), timed_out=True)  # those made died too
    check_none_survived(result, len(ESCAPES), timed_out=True)


def test_nothing_the_code_starts_outlives_an_interrupted_run():
    # A learner pressing "stop" in Jupyter interrupts run_code: the code and its escapees go too.
    # The code waits asleep once its escapee runs: a busy loop would be interrupted the same way, burning a core.
    drop = tempfile.mkdtemp(prefix="agentkit-test-")
    os.chmod(drop, 0o777)  # the child may run as another user
    pid_file = os.path.join(drop, "pid")
    code = ESCAPES["fork+setsid"] + (f"\nopen({pid_file!r} + '.new', 'w').write(str(pid))\n"
                                     f"os.rename({pid_file!r} + '.new', {pid_file!r})\ntime.sleep(600)")

    def interrupt(*_):
        raise KeyboardInterrupt

    def interrupt_once_the_escapee_runs(main_thread):
        deadline = time.monotonic() + 60  # only a backstop: the escapee writes its file at once
        while not os.path.exists(pid_file) and time.monotonic() < deadline:
            time.sleep(0.01)
        signal.pthread_kill(main_thread, signal.SIGALRM)

    previous = signal.signal(signal.SIGALRM, interrupt)
    watcher = threading.Thread(target=interrupt_once_the_escapee_runs, args=(threading.get_ident(),))
    start = time.monotonic()
    try:
        watcher.start()
        with pytest.raises(KeyboardInterrupt):
            run_code(code, guard=False, timeout_s=120)
        # It did not wait for the code's clock: that would have ended the run at 120 s, with no interrupt to raise.
        # (Not a bound on speed: it tells the interrupt from the clock, 100 times what the interrupt takes.)
        assert time.monotonic() - start < 120
        pid = int(open(pid_file).read())
        assert not alive(pid)
    finally:
        watcher.join()
        signal.signal(signal.SIGALRM, previous)
        shutil.rmtree(drop, ignore_errors=True)


def test_a_real_time_signal_is_a_result_not_an_exception():
    # signal.Signals has no member for SIGRTMIN+1 .. SIGRTMAX-1: their numbers must not raise.
    result = run_code("import signal\nsignal.raise_signal(signal.SIGRTMIN + 6)")
    assert result.error == "killed by SIGRTMIN+6" and result.exit_code == -(signal.SIGRTMIN + 6)


# The guard's refusal of a socket, word for word.
NO_NETWORK = "PermissionError: sandbox guard: socket.socket is not allowed (no network)"


def test_udp_to_a_local_listener_is_refused_and_nothing_arrives():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as listener:
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        result = run_code("import socket\n"
                          "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                          f"s.sendto(b'escaped', ('127.0.0.1', {port}))")
        assert result.error == NO_NETWORK
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.recv(100)


def test_every_way_to_a_socket_address_is_refused_but_asyncio_still_works():
    attempts = {
        "tcp": "socket.create_connection(('127.0.0.1', {port}))",
        "unix connect": "socket.socket(socket.AF_UNIX).connect('/run/any.sock')",
        "unix bind": "socket.socket(socket.AF_UNIX).bind('mine.sock')",
        "pair sendto": "socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0].sendto(b'x', '/run/any.sock')",
        "pair sendmsg": "socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0].sendmsg([b'x'], [], 0, '/run/any.sock')",
    }
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        code = "import asyncio, socket\nrefused = {}\n" + "".join(
            f"try:\n    {how.format(port=listener.getsockname()[1])}\nexcept OSError as e:\n    refused[{name!r}] = str(e)\n"
            for name, how in attempts.items())
        # asyncio talks to itself over a socket pair: the guard allows that pair, and nothing more.
        code += "async def seven():\n    await asyncio.sleep(0)\n    return 7\n"
        result = run_code(code, "[refused, asyncio.run(seven())]")
    refused, seven = result.value
    calls = {"tcp": "socket.socket", "unix connect": "socket.connect", "unix bind": "socket.bind",
             "pair sendto": "socket.sendto", "pair sendmsg": "socket.sendmsg"}
    assert refused == {name: f"sandbox guard: {call} is not allowed (no network)" for name, call in calls.items()}
    assert seven == 7


def test_the_guard_cannot_be_switched_off_by_rebinding_its_settings():
    # The code shares the interpreter with the guard: sys.modules["__main__"] is the supervisor's module.
    code = ("import sys\nmain = sys.modules['__main__']\n"
            "main.NEW_PROCESS = main.NETWORK = frozenset()\nmain.AF_UNIX = 2\n"
            "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM)")
    assert run_code(code).error == NO_NETWORK


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can run the code as another user")
def test_as_root_each_run_gets_a_user_of_its_own_that_cannot_signal_us_or_its_supervisor():
    import pwd

    code = f"""
import os, signal
reached = []
for pid in ({os.getpid()}, os.getppid()):  # us, then the supervisor (through a pidfd: no audit event)
    try:
        signal.pidfd_send_signal(os.pidfd_open(pid), 0)
        reached.append(pid)
    except PermissionError:
        pass
"""
    runs = [run_code(code, "[os.getuid(), os.getgid(), os.getgroups(), reached]", guard=False) for _ in range(2)]
    (uid, gid, groups, reached), second = runs[0].value, runs[1].value
    assert uid not in (0, pwd.getpwnam("nobody").pw_uid)  # `nobody` is shared with other programs
    assert second[0] != uid and groups == [] and gid != 0
    assert reached == []


@pytest.mark.parametrize("limit", [{"memory_mb": -1}, {"memory_mb": 0}, {"timeout_s": 0}, {"max_processes": -1},
                                   {"max_file_mb": -1}, {"timeout_s": float("inf")}])
def test_a_limit_that_is_no_limit_is_refused(limit):
    with pytest.raises(ValueError):  # -1 would set RLIMIT_INFINITY: no limit at all
        run_code("print(1)", **limit)


def test_a_deeply_nested_report_is_a_clear_error():
    code = "import os\nos.write(3, b'{\"value\": ' + b'[' * 100_000 + b']' * 100_000 + b', \"error\": null}')\nos._exit(0)"
    assert run_code(code).error == "the report is nested too deeply to read"
