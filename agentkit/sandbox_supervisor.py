"""The trusted half of `agentkit.sandbox`: a supervisor process that runs the code in a child and
leaves nothing behind.

`run_code` starts this file as `python -I -S -B sandbox_supervisor.py` and writes the job (JSON) to
its stdin. The supervisor:

1. becomes a *child subreaper* (Linux `prctl`): whatever the code starts, and however it detaches
   (`setsid`, `setpgid`, double forks, `start_new_session=True`), stays its descendant;
2. forks the child, which sets the rlimits, drops to the job's user when we are root, sets
   `no_new_privs` (set-uid programs gain nothing), installs the guard rail and runs the code;
3. waits until the child ends or the wall clock runs out;
4. kills every descendant, and every process of the job's user when that user is the run's own,
   with SIGKILL, reaps them, and counts what still runs;
5. prints one JSON line: the child's pid and exit code, timed_out, duration_s, survivors (pids).

The child writes its report (value or error) to fd 3 and its output to fds 1 and 2, all files
`run_code` opened. Without /proc or prctl (macOS) the clean-up can only kill the child's process
group, and survivors is null (unknown). Only the standard library: this runs outside the venv.
"""
import json
import os
import signal
import sys
import time
import traceback

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
REPORT_FD = 3
POLL_S = 0.005
CLEAN_UP_PATIENCE_S = 2.0

# --- the guard rail (installed in the child only) ------------------------------
# An audit hook sees the calls Python announces. It stops honest mistakes early, with a clear error;
# code that replaces sys.audit, or calls what is not audited (_posixsubprocess.fork_exec,
# os.pidfd_open), gets past it, and then the other layers (limits, user, clean-up) are what hold.

NEW_PROCESS = frozenset({"os.system", "os.fork", "os.forkpty", "os.exec", "os.posix_spawn", "os.spawn",
                         "subprocess.Popen", "pty.spawn"})
NETWORK = frozenset({"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"})
SIGNALS = frozenset({"os.kill", "os.killpg"})
PATH_CHANGES = frozenset({"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown",
                          "os.symlink", "os.link", "os.truncate", "os.utime", "shutil.rmtree"})
AF_UNIX = 1  # socket.AF_UNIX on every POSIX system (importing socket for it would slow start-up)
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def make_guard(workdir):
    """The audit hook: refuse new processes, sockets (but a local pair), signals, native code, writes outside."""
    # Bound here, not read from module globals at each event: the code shares this interpreter and
    # could rebind those (sys.modules["__main__"] is this module).
    new_process, network, signals, path_changes = NEW_PROCESS, NETWORK, SIGNALS, PATH_CHANGES
    af_unix, write_flags = AF_UNIX, WRITE_FLAGS

    def inside(path):
        if isinstance(path, int):
            return True  # an already-open descriptor: it was checked when it was opened
        full = os.path.realpath(os.path.join(workdir, os.fsdecode(path)))
        return full == workdir or full.startswith(workdir + os.sep)

    def guard(event, args):
        if event in new_process:
            raise PermissionError(f"sandbox guard: {event} is not allowed (no new processes)")
        # socket.socketpair() is how asyncio wakes itself up: an AF_UNIX pair with no address.
        if event == "socket.__new__" and args[1] != af_unix:
            raise PermissionError("sandbox guard: socket.socket is not allowed (no network)")
        if event in network:
            raise PermissionError(f"sandbox guard: {event} is not allowed (no network)")
        if event in signals:
            raise PermissionError(f"sandbox guard: {event} is not allowed (no signals to processes)")
        if event == "ctypes.dlopen":
            raise PermissionError("sandbox guard: ctypes.dlopen is not allowed (no native code)")
        if event == "open" and args[2] & write_flags and not inside(args[0]):
            raise PermissionError("sandbox guard: writing outside the working directory is not allowed")
        if event in path_changes and not all(inside(a) for a in args if isinstance(a, (str, bytes, os.PathLike))):
            raise PermissionError(f"sandbox guard: {event} outside the working directory is not allowed")

    return guard


# --- the child: limits, identity, guard, then the code -------------------------


def limit(which, soft, hard=None):
    import resource

    ceiling = resource.getrlimit(which)[1]
    hard = soft if hard is None else hard
    if ceiling != resource.RLIM_INFINITY:
        soft, hard = min(soft, ceiling), min(hard, ceiling)
    resource.setrlimit(which, (soft, hard))


def become_child(job, libc):
    """In the forked child: own session, files on fds 0-3 only, limits, identity. Never runs the code."""
    import fcntl
    import resource

    supervisor = os.getppid()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    os.setsid()
    out, err, report = (fcntl.fcntl(job[name], fcntl.F_DUPFD, 10) for name in ("stdout_fd", "stderr_fd", "report_fd"))
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    for source, target in ((out, 1), (err, 2), (report, REPORT_FD)):
        os.dup2(source, target)
    os.closerange(REPORT_FD + 1, 2**16)  # our stdin/stdout pipes and every copy made above
    limit(resource.RLIMIT_CORE, 0)
    limit(resource.RLIMIT_CPU, job["cpu_s"], job["cpu_s"] + 1)  # SIGXCPU, then SIGKILL
    limit(resource.RLIMIT_AS, job["memory_mb"] * 2**20)
    limit(resource.RLIMIT_FSIZE, job["max_file_mb"] * 2**20)
    limit(resource.RLIMIT_NPROC, job["max_processes"])  # counts the user's processes; binds only a non-root user
    if job["uid"] is not None:
        os.setgroups([])
        os.setgid(job["gid"])
        os.setuid(job["uid"])
    if libc is not None:
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # should the supervisor die, so does the child
        if os.getppid() != supervisor:
            os._exit(70)


def run_the_code(job):
    """Run the code (and the expression) and write the report to fd 3; exit, never return."""
    report_file = os.fdopen(REPORT_FD, "w", encoding="utf-8")
    leader = os.getpid()
    if job["guard"]:
        sys.addaudithook(make_guard(os.path.realpath(os.getcwd())))
    report = {"value": None, "error": None}
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(job["code"], "<code>", "exec"), namespace)
        if job["expression"] is not None:
            report["value"] = eval(compile(job["expression"], "<expression>", "eval"), namespace)
        namespace.clear()
        text = json.dumps(report)
    except SystemExit as exc:
        text = json.dumps({"value": None, "error": None if exc.code in (0, None) else f"SystemExit: {exc.code}"})
    except BaseException as exc:
        namespace.clear()
        error = traceback.format_exception_only(type(exc), exc)[-1].strip()
        if isinstance(exc, TypeError) and "JSON serializable" in str(exc):
            error = "the value is not JSON-serialisable: " + error
        traceback.print_exc()
        text = json.dumps({"value": None, "error": error})
    finally:
        if os.getpid() != leader:
            os._exit(1)  # a process the code forked never reports; only the child does
    report_file.write(text)
    report_file.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# --- the supervisor: wait, then kill and reap everything the code started ------


_STATUS_KEYS = {"PP", "St", "Ui"}  # the PPid, State and Uid lines


def processes():
    """{pid: (parent pid, state, uids)} of every process, from /proc/PID/status."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                fields = dict(line.split(":\t", 1) for line in f.read().splitlines() if line[:2] in _STATUS_KEYS)
            table[int(entry)] = (int(fields["PPid"]), fields["State"][0], set(map(int, fields["Uid"].split())))
        except (OSError, KeyError, ValueError):
            continue  # it ended while we looked
    return table


def descendants(root, table):
    children = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            found.append(pid)
            todo.append(pid)
    return found


def reap(statuses):
    """Collect every ended child (the code's orphans are ours too), keeping their exit statuses."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        statuses[pid] = status


def has_children():
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        return True
    except ChildProcessError:
        return False


def sweep(root, uid, statuses=None, patience_s=CLEAN_UP_PATIENCE_S):
    """SIGKILL every descendant of `root` and every process of `uid` until none is left; return the pids still running.

    `statuses` (a dict) means we are their reaper: reap them as they die. `root` or `uid` may be None.
    """
    deadline = time.monotonic() + patience_s
    while True:
        table = processes()
        targets = set(descendants(root, table)) if root is not None else set()
        if uid is not None:
            targets |= {pid for pid, (_, _, uids) in table.items() if uid in uids}
        targets.discard(os.getpid())
        running = [pid for pid in targets if table[pid][1] not in ("Z", "X")]
        unreaped = [pid for pid in targets if statuses is not None and table[pid][0] == os.getpid()]
        if (not running and not unreaped) or time.monotonic() > deadline:
            return sorted(running)
        for pid in running:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if statuses is not None:
            reap(statuses)
        time.sleep(POLL_S)


def load_libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc if hasattr(libc, "prctl") else None
    except OSError:
        return None


def main():
    job = json.loads(sys.stdin.read())
    libc = load_libc()
    # As a subreaper we adopt every orphan of the code; without /proc we could not find them anyway.
    tracks_tree = (libc is not None and os.path.isdir("/proc/self")
                   and libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    if libc is not None:
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # the code's user may not open our pipes via /proc
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run_code was interrupted: clean up, go
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # until each side is ready for it
    start = time.monotonic()
    child = os.fork()
    if child == 0:
        try:
            become_child(job, libc)
        except BaseException:
            traceback.print_exc()
            os._exit(70)
        try:
            run_the_code(job)
        finally:
            os._exit(1)  # the report could not be written
    statuses, timed_out = {}, False
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        deadline = start + job["timeout_s"]
        while child not in statuses:
            reap(statuses)
            if child not in statuses and time.monotonic() >= deadline:
                timed_out = True
                break
            time.sleep(POLL_S)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        duration = time.monotonic() - start
        if tracks_tree and child in statuses and not has_children():
            survivors = []  # every orphan of the code is our child, so none means nothing is left
        elif tracks_tree:
            survivors = sweep(os.getpid(), job["uid"] if job["own_uid"] else None, statuses)
        else:  # all we can reach is the child's process group
            survivors = None
            try:
                os.killpg(child, signal.SIGKILL)
            except OSError:
                pass
            if child not in statuses:
                statuses[child] = os.waitpid(child, 0)[1]
    status = statuses.get(child)
    print(json.dumps({"pid": child, "timed_out": timed_out, "duration_s": duration, "survivors": survivors,
                      "exit_code": None if status is None else os.waitstatus_to_exitcode(status)}))


if __name__ == "__main__":
    main()
