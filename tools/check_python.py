"""Refuse, at once and clearly, a Python the course does not support (run by `make setup` and tools/install.py).

Kept to syntax every Python 3 parses, so an old interpreter gets the message, not a SyntaxError.
"""
import sys

SUPPORTED = ((3, 11), (3, 12), (3, 13), (3, 14), (3, 15))
WHY_NOT_OLDER = ("Python 3.10 and older cannot install the pinned packages (numpy 2.4, matplotlib 3.11, "
                 "ipykernel 7.4 and hypothesis 6.170 need 3.11+); 3.10 reached end of life in October 2026.")
WHY_NOT_NEWER = ("Pythons newer than %d.%d are not tested with this course yet: some pinned packages may have "
                 "no wheel for them, and pip would try to build those from source." % SUPPORTED[-1])


def main():
    version = sys.version_info[:2]
    if version in SUPPORTED:
        return 0
    names = ", ".join("%d.%d" % v for v in SUPPORTED[:-1]) + " or %d.%d" % SUPPORTED[-1]
    lines = [
        "This course needs Python %s; `%s` is Python %d.%d." % (names, sys.executable, version[0], version[1]),
        WHY_NOT_OLDER if version < SUPPORTED[0] else WHY_NOT_NEWER,
        "Get one and point make at it, for example:",
        "  uv python install 3.12 && make setup PYTHON=\"$(uv python find 3.12)\"",
        "  pyenv install 3.12 && make setup PYTHON=\"$(pyenv root)/versions/$(pyenv latest 3.12)/bin/python\"",
        "  Debian/Ubuntu: sudo apt install python3.12-venv (if your release has it), then make setup PYTHON=python3.12",
        "  or an installer from https://www.python.org/downloads/",
        "Without make: run tools/install.py with that Python, inside a venv made with it.",
    ]
    sys.stderr.write("\n".join(lines) + "\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
