"""What model-written code leaves on disk: measured while it runs (by `agentkit.wasm_worker`), removed after.

The code decides what its folders hold, so every name in them is hostile: a walk never follows a
link, goes through directory descriptors (no path grows long, however deep the folders nest; a
folder is opened relative to its parent) and at most MAX_DEPTH deep (each level holds a descriptor
while the walk is below it). It looks at the clock at every entry, and an entry that cannot be
measured is an error, never a zero. Files the code removed while still holding them open take space
all the same: they are counted through the process's own descriptors, which Linux and macOS list in
`/dev/fd` (on Windows they are not counted).
"""
from __future__ import annotations

import contextlib
import errno
import itertools
import os
import secrets
import stat
import time
from pathlib import Path

MAX_DEPTH = 100  # folders inside folders
_BY_DESCRIPTOR = os.listdir in os.supports_fd and os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd
_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_GONE = {errno.ENOENT, errno.ENOTDIR, errno.ELOOP}  # removed, or swapped for a file or a link, since it was listed


class TooDeep(Exception):
    """Folders nested deeper than MAX_DEPTH."""


class TimeUp(Exception):
    """The deadline passed during a measurement."""


def usage(folders, max_bytes: int, max_entries: int, deadline: float | None = None,
          held_before: frozenset = frozenset()) -> tuple[int, int]:
    """(bytes, entries) in `folders`, and in files this process opened since `held_before` (see `held_files`)
    whose every name is gone: the code's files, removed while still open.

    Apparent sizes (a sparse file counts in full), links not followed, a hard-linked file once; counting
    stops once past a limit. Raises TimeUp past `deadline`, TooDeep, or OSError for what it could not measure.
    """
    device = os.stat(folders[0]).st_dev
    total = entries = 0
    for key, size in held_files().items():
        if key[0] == device and key not in held_before:
            total, entries = total + size, entries + 1
    seen: set[tuple[int, int]] = set()
    for root in folders:
        for status in _walk(root, deadline):
            entries += 1
            if not stat.S_ISDIR(status.st_mode) and (status.st_dev, status.st_ino) not in seen:
                seen.add((status.st_dev, status.st_ino))
                total += status.st_size
            if total > max_bytes or entries > max_entries:
                return total, entries
    return total, entries


def held_files() -> dict[tuple[int, int], int]:
    """{(device, inode): size} of regular files open in this process with no name left (Linux and macOS list
    a process's descriptors in /dev/fd; elsewhere, empty). The engine's own are among them: a memory image."""
    if not os.path.isdir("/dev/fd"):
        return {}
    found = {}
    for name in os.listdir("/dev/fd"):
        try:
            status = os.fstat(int(name))
        except OSError as exc:
            if exc.errno == errno.EBADF:  # closed since the listing (the listing's own, for one)
                continue
            raise
        if stat.S_ISREG(status.st_mode) and status.st_nlink == 0:
            found[status.st_dev, status.st_ino] = status.st_size
    return found


def _walk(root: Path, deadline: float | None):
    """The status of every entry under `root`, depth first, one open folder per level of the current path."""
    if not _BY_DESCRIPTOR:
        yield from _walk_by_path(root, deadline)
        return
    opened = [_open_folder(root)]
    try:
        while opened:
            folder, names = opened[-1]
            name = next(names, None)
            if name is None:
                os.close(opened.pop()[0])
                continue
            if deadline is not None and time.monotonic() > deadline:
                raise TimeUp
            try:
                status = os.stat(name, dir_fd=folder, follow_symlinks=False)
                if stat.S_ISDIR(status.st_mode):
                    if len(opened) > MAX_DEPTH:
                        raise TooDeep
                    opened.append(_open_folder(name, folder))
            except OSError as exc:
                if exc.errno not in _GONE:
                    raise
                continue
            yield status
    finally:
        for folder, _ in opened:
            os.close(folder)


def _open_folder(name, parent: int | None = None) -> tuple[int, object]:
    """A folder's descriptor (never through a link) and an iterator over its names."""
    folder = os.open(name, _FOLDER_FLAGS, dir_fd=parent)
    try:
        return folder, iter(os.listdir(folder))
    except BaseException:
        os.close(folder)
        raise


def _walk_by_path(root: Path, deadline: float | None):
    """The same walk by names, where folders have no descriptors (Windows): a path too long fails, and stops the run."""
    pending = [(os.fspath(root), 1)]
    while pending:
        folder, depth = pending.pop()
        try:
            with os.scandir(folder) as listing:
                for entry in listing:
                    if deadline is not None and time.monotonic() > deadline:
                        raise TimeUp
                    status = entry.stat(follow_symlinks=False)
                    yield status
                    if stat.S_ISDIR(status.st_mode):
                        if depth > MAX_DEPTH:
                            raise TooDeep
                        pending.append((entry.path, depth + 1))
        except FileNotFoundError:
            continue


def remove_tree(root: Path) -> None:
    """Remove a folder the code filled, however deep (shutil.rmtree recurses, and long paths fail):
    each sub-folder's entries are first moved up into `root`, so every path stays short."""
    unique = f"~{secrets.token_hex(8)}-"
    for number in itertools.count():
        try:
            with os.scandir(root) as listing:
                entries = list(listing)
        except OSError:
            return
        if not entries or number > 100_000:  # the bound only guards against a loop we did not foresee
            break
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    with os.scandir(entry.path) as inner:
                        children = [child.path for child in inner]
                    for index, child in enumerate(children):
                        os.rename(child, root / f"{unique}{number}-{index}")
                    os.rmdir(entry.path)
                else:
                    os.unlink(entry.path)
    with contextlib.suppress(OSError):
        os.rmdir(root)
