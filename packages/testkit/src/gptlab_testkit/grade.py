"""`python -m gptlab_testkit.grade`: grade one attempt, a drill id, a seed-style folder or a
class (`gptlab_testkit.commands.grade`)."""

from gptlab_testkit.commands.grade import run

if __name__ == "__main__":
    run()
