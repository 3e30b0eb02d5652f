"""The folding engine: pure values and functions.

Nothing in this package performs I/O, talks to a provider SDK, touches the database or
reads the clock; every such thing is injected by the caller. `tests/core/test_purity.py`
enforces that by scanning the imports.
"""
