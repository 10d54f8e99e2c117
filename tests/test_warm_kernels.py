"""The test command's notebook kernels, forked from a warm parent (tests/warm_kernels.py).

A forked kernel must be what nbval would otherwise start: the kernel command it was given, in
the cwd and environment asked for, writing to the stderr asked for, stopped and gone when nbval
shuts it down. Only the preloaded third-party modules may differ, and never agentkit.
"""
import json
import os
import subprocess
import sys

import pytest

from tests import warm_kernels

pytestmark = pytest.mark.skipif(not warm_kernels.available(), reason="warm kernels are for Linux with pidfd")

PROBE = """
import json, os, sys
print(json.dumps({"cwd": os.getcwd(), "marker": os.environ.get("WARM_KERNEL_MARKER"), "ppid": os.getppid(),
                  "sid": os.getsid(0), "pid": os.getpid(), "argv": sys.argv[1:],
                  "preloaded": "matplotlib.pyplot" in sys.modules, "agentkit": "agentkit" in sys.modules}))
print("to the kernel's stderr", file=sys.__stderr__, flush=True)
"""


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


@pytest.fixture(scope="module")
def warm_parent():
    warm_kernels.install()
    warm_kernels.start()  # a no-op when the test command has started it already
    return os.environ[warm_kernels.SOCKET_VARIABLE]


def test_a_forked_kernel_runs_where_and_as_nbval_asked_and_is_gone_after_shutdown(warm_parent, tmp_path):
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME, start_new_kernel

    stderr = open(tmp_path / "kernel.err", "w")
    env = dict(os.environ, WARM_KERNEL_MARKER="asked-for")
    km, kc = start_new_kernel(kernel_name=CURRENT_ENV_KERNEL_NAME, cwd=str(tmp_path), env=env, stderr=stderr)
    stderr.close()
    kernel = km.provisioner.process
    try:
        assert isinstance(kernel, warm_kernels.ForkedKernel)
        lines = []
        kc.execute_interactive(PROBE, timeout=30, output_hook=lambda msg: lines.append(msg["content"].get("text", "")))
        seen = json.loads("".join(lines))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)

    assert seen["cwd"] == str(tmp_path) and seen["marker"] == "asked-for"
    assert seen["argv"][0] == "-f" and seen["argv"][1] == km.connection_file
    assert seen["sid"] == seen["pid"]  # its own session, as jupyter_client's launch_kernel gives it
    assert seen["ppid"] != os.getpid()  # a child of the warm parent, not of this worker
    assert seen["preloaded"] and not seen["agentkit"]
    assert "to the kernel's stderr" in (tmp_path / "kernel.err").read_text()
    assert kernel.poll() is not None
    assert not os.path.exists(f"/proc/{seen['pid']}")  # ended and reaped by its parent: no zombie


def test_a_kernel_killed_from_outside_is_seen_dead_and_a_shutdown_still_ends_cleanly(warm_parent, tmp_path):
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME, start_new_kernel

    km, kc = start_new_kernel(kernel_name=CURRENT_ENV_KERNEL_NAME, cwd=str(tmp_path), stderr=subprocess.DEVNULL)
    kernel = km.provisioner.process
    assert km.is_alive() and parent_of(kernel.pid) != os.getpid()
    os.kill(kernel.pid, 9)
    kernel.wait(timeout=10)
    assert not km.is_alive()
    kc.stop_channels()
    km.shutdown_kernel(now=True)  # nothing left to signal: no error


@pytest.mark.parametrize("cmd, streams, warm", [
    ([sys.executable, "-m", "ipykernel_launcher", "-f", "k.json"], {}, True),
    ([sys.executable, "-m", "ipykernel_launcher", "-f", "k.json"], {"stderr": subprocess.DEVNULL}, True),
    ([sys.executable, "-m", "ipykernel_launcher", "-f", "k.json"], {"stdout": subprocess.PIPE}, False),
    (["/another/python", "-m", "ipykernel_launcher", "-f", "k.json"], {}, False),
    ([sys.executable, "-m", "another_kernel", "-f", "k.json"], {}, False),
])
def test_only_this_pythons_ipykernel_without_pipes_is_forked(cmd, streams, warm, monkeypatch):
    monkeypatch.setenv(warm_kernels.SOCKET_VARIABLE, "/nowhere.sock")
    assert warm_kernels.forkable(cmd, streams) is warm
    monkeypatch.setenv("AGENTKIT_COLD_KERNELS", "1")
    assert warm_kernels.forkable(cmd, streams) is False


def test_with_its_warm_parent_gone_a_kernel_starts_the_usual_way_and_says_so(tmp_path, monkeypatch):
    import asyncio

    from jupyter_client.provisioning import LocalProvisioner

    started = []

    async def usual_launch(self, cmd, **kwargs):
        started.append(cmd)
        return {}

    monkeypatch.setattr(LocalProvisioner, "launch_kernel", usual_launch)
    monkeypatch.setenv(warm_kernels.SOCKET_VARIABLE, str(tmp_path / "gone.sock"))
    provisioner = warm_kernels.WarmKernelProvisioner(kernel_id="k", kernel_spec=None, parent=None)
    cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "k.json"]
    with pytest.warns(UserWarning, match="No warm kernel parent.*starts the usual way"):
        asyncio.run(provisioner.launch_kernel(cmd))
    assert started == [cmd] and provisioner.process is None


SERVE = """
import os, socket, sys
from tests import warm_kernels
warm_kernels.REQUEST_TIMEOUT_S = 0.1
warm_kernels._serve(socket.socket(fileno=int(sys.argv[1])))
os._exit(0)  # the forked child: a stand-in kernel that ends at once
"""


@pytest.mark.parametrize("says", [b"", b'{"argv": '])  # nothing at all; half a request
def test_an_asker_that_goes_quiet_is_hung_up_on_and_the_next_kernel_is_still_forked(tmp_path, says):
    import socket

    path = str(tmp_path / "fork.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parent = subprocess.Popen([sys.executable, "-c", SERVE, str(listener.fileno())], stdin=subprocess.PIPE,
                              pass_fds=[listener.fileno()], cwd=root)
    listener.close()
    try:
        with socket.socket(socket.AF_UNIX) as quiet, socket.socket(socket.AF_UNIX) as asker, \
                open(os.devnull, "wb") as null:
            quiet.connect(path)  # first in the queue, then silent
            quiet.sendall(says)
            asker.connect(path)
            asker.settimeout(30)  # the fix answers in a fraction of a second; before it, never
            request = json.dumps({"argv": ["kernel"], "env": {}, "cwd": None}).encode() + b"\n"
            socket.send_fds(asker, [request], [null.fileno(), null.fileno()])
            reply = json.loads(asker.makefile("rb").readline())
            quiet.settimeout(30)
            assert quiet.recv(1) == b""  # the quiet one was hung up on
        assert set(reply) == {"pid"}
    finally:
        parent.stdin.close()
        parent.wait(timeout=30)
    assert parent.returncode == 0
