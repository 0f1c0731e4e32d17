"""Timed blank-editor practice over gptlab\x27s grader."""
