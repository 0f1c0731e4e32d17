"""The grade and class commands (`python -m gptlab_testkit.grade`).

- `grade`: grade one attempt, a drill id, a seed-style folder or a class.
- `grading`: the run behind it; `classroom`: a class of submissions; `gradescope`: the
  results a teacher's tools read; `checkout_guard`, `suggest`: guarding the checkout, and
  "did you mean" for a mistyped name.
"""
