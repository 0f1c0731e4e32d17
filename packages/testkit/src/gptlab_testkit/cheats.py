"""`python -m gptlab_testkit.cheats`: prove hostile submissions earn nothing
(`gptlab_testkit.audit.cheats`)."""

from gptlab_testkit.audit.cheats import run

if __name__ == "__main__":
    run()
