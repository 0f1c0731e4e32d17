"""A folder submission whose p19.py is a symbolic link to the reference (a zip carries
links, and the grader's checkout path is public): grade, reading the folder as root
outside any sandbox, would have sent the reference's source as the submission's."""

VARIABLE = "DRILL_P19_MODULE"
CHEAT = "the submission's p19.py is a symbolic link to the reference's source"
SAYS = "symbolic link"
# The runner grades a folder whose seed-named file is a link to this file of the
# checkout (made where it is graded); this file's own source is never graded.
LINK = "packages/drills/src/gptlab_drills/p19.py"
