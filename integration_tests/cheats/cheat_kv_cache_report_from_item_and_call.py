"""kv_cache (not judged yet): wrap TestReport.from_item_and_call beside an empty KVCache."""

VARIABLE = "KV_CACHE_MODULE"
CHEAT = "harness patching in a package the judge does not cover yet (kv_cache)"
SAYS = "passed"
ENFORCED = False
WHY = "kv_cache still runs in the pytest process (judge mode covers drills); see the README"

from _pytest.reports import TestReport  # noqa: E402

_made = TestReport.from_item_and_call.__func__


def _passed(cls, item, call):
    report = _made(cls, item, call)
    report.outcome, report.longrepr = "passed", None
    return report


TestReport.from_item_and_call = classmethod(_passed)


class KVCache:
    pass


def append_kv_cache(*args, **kwargs):
    return None
