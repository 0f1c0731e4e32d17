"""`python -m gptlab_testkit.known_bad`: prove the suites catch their known-bad candidates and pass
the faithful ones (`gptlab_testkit.audit.known_bad`)."""

from gptlab_testkit.audit.known_bad import run

if __name__ == "__main__":
    run()
