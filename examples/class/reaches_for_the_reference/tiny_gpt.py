"""A submission that hands in this project's reference model under the seed's file name.

It is not graded: a submission's code runs where this project's packages are out of its
reach, so importing `tinygpt` fails, and the class row says so in one line.
"""

from tinygpt import CausalLMOutput, GPTConfig, TinyGPT

__all__ = ["CausalLMOutput", "GPTConfig", "TinyGPT"]
