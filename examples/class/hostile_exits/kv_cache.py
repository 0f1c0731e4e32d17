"""A hostile submission: every call ends the grading process that runs it (os._exit(3)).

Self-contained, as a submission is. The grader must fail each test it reaches with
"crashed", stop the candidate after three crashes, and carry on with the next submission.
"""

import os


def append_kv_cache(*args: object, **kwargs: object) -> None:
    os._exit(3)


class KVCache:
    def __init__(self, *args: object, **kwargs: object) -> None:
        os._exit(3)

    @classmethod
    def from_past_key_values(cls, *args: object, **kwargs: object) -> "KVCache":
        os._exit(3)
