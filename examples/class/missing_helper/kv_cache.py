"""A submission whose helper module was left out: `kv_cache_slots.py` is not beside it.

It is not graded: the class row, grade's last line and results.json name the missing
module in one line, and the row counts 0 of the tests it would have run.
"""

from kv_cache_slots import append_kv_cache

__all__ = ["KVCache", "append_kv_cache"]


class KVCache:
    """Never reached: the import above fails first."""
