"""`python -m gptlab_testkit.mutation`: mutation testing of every reference against
its contract tests (`gptlab_testkit.audit.mutation`)."""

from gptlab_testkit.audit.mutation import run

if __name__ == "__main__":
    run()
