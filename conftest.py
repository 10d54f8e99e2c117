"""Run the slowest files first, so pytest-xdist's two workers finish together."""

# The real-model files dominate the suite's wall time (SmolLM2 generates on the CPU).
SLOW_FIRST = ("03b_real_model.ipynb", "test_local_model.py", "05_reflection.ipynb")


def pytest_collection_modifyitems(items):
    def rank(item):
        path = str(item.fspath)
        return next((i for i, name in enumerate(SLOW_FIRST) if path.endswith(name)), len(SLOW_FIRST))

    items.sort(key=rank)  # stable: each file's own order is kept
