"""tinygpt: wrap TestReport.from_item_and_call beside a model that computes nothing (the
issue's third example: 132/132 while the model ran in the pytest process). Judged like
every model now, the import runs in the worker, where pytest is out of reach."""

VARIABLE = "TINY_GPT_MODULE"
CHEAT = "harness patching: TestReport.from_item_and_call, beside an empty TinyGPT"
SAYS = "reached for _pytest"

from dataclasses import dataclass  # noqa: E402

from _pytest.reports import TestReport  # noqa: E402

_made = TestReport.from_item_and_call.__func__


def _passed(cls, item, call):
    report = _made(cls, item, call)
    report.outcome, report.longrepr = "passed", None
    return report


TestReport.from_item_and_call = classmethod(_passed)


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 1


class TinyGPT:
    def __init__(self, config):
        self.config = config
