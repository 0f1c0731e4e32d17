"""The candidate's worker: a fresh interpreter that runs a judged candidate's code.

A package of its own, apart from `gptlab_testkit`: the judge copies this folder into the
worker's sandbox and runs it (`python -I -S -B <the copy> ...`), where nothing else of this
project can be imported. It imports nothing of the testkit; the judge imports its wire
format (`wire`) and the collectives' recorder (`collectives`) from here.

- `__main__`: the entry the interpreter runs.
- `serve`: the loop: import the candidate from the source sent, answer calls.
- `wire`: the messages both sides exchange.
- `collectives`: a distributed rank's record of the collectives it entered.
"""
