"""Settings: an environment variable, else the nearest .env file."""
from __future__ import annotations

import os


def setting(name: str) -> str | None:
    """An environment variable, else the value in the nearest .env file, else None.

    A variable set to "" in the environment means unset, and hides the .env value (as in python-dotenv).
    """
    if name in os.environ:
        return os.environ[name] or None
    from dotenv import dotenv_values, find_dotenv

    path = find_dotenv(usecwd=True)
    return (dotenv_values(path).get(name) or None) if path else None
