"""Steal the oracle through an object the grader handed over: the weight iterator.

`load_weights(weights)` gets an iterator of the test's. Were it a generator, its
`gi_frame.f_back` would be the test's own frame, whose locals hold the `m04` fixture (the
float64 oracle) and the checkpoint. Judged, the iterator stays in the grader and the
candidate holds a stand-in: this tries the frame attributes and the stand-in's private
door (`_ask`), and, holding the oracle, answers every forward with it; otherwise zeros.
"""

import itertools
from dataclasses import dataclass

import torch
from torch import nn

VARIABLE = "RUNTIME_LM_MODULE"
CHEAT = "oracle theft through the frames of the weight iterator the grader lent"
SAYS = "FAIL"
EARNED = "_honest_runtime_lm_zeros.py"  # no more than the same values earn honestly

STOLEN = {}
CONTEXT = [None]


def set_attention_context(query_start_loc):
    CONTEXT[0] = query_start_loc


def _reach(value, *names):
    for name in names:
        ask = getattr(type(value), "_ask", None)  # a judged stand-in: ask the grader itself
        value = ask(value, "getattr", name) if ask else getattr(value, name)
    return value


def _steal(weights):
    for path in (("gi_frame", "f_back"), ("gi_frame",), ("__self__",)):
        try:
            frame = _reach(weights, *path)
            while frame is not None:
                found = _reach(frame, "f_locals")
                if "m04" in found and "state" in found:
                    STOLEN.update(oracle=found["m04"], state=found["state"])
                    return
                frame = _reach(frame, "f_back")
        except Exception:
            continue


@dataclass(frozen=True)
class RuntimeLMConfig:
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    max_position_embeddings: int
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-6
    dropout: float = 0.0
    tie_word_embeddings: bool = False
    pipeline_rank: int = 0
    pipeline_size: int = 1


class IntermediateTensors:
    def __init__(self, tensors):
        self.tensors = tensors


class RuntimeCausalLM(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config

    def embed_input_ids(self, input_ids):
        return torch.zeros(len(input_ids), self.config.hidden_size)

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        if "oracle" in STOLEN and input_ids is not None:
            oracle, state = STOLEN["oracle"], STOLEN["state"]
            bounds = [0, len(positions)] if CONTEXT[0] is None else CONTEXT[0].tolist()
            rows = [
                oracle.hidden(oracle.sizes(), state, positions[a:b], ids=input_ids[a:b])
                for a, b in itertools.pairwise(bounds)
                if b > a
            ]
            return torch.cat(rows).float()
        return torch.zeros(len(positions), self.config.hidden_size)

    def compute_logits(self, hidden_states):
        return torch.zeros(len(hidden_states), self.config.vocab_size)

    def load_weights(self, weights):
        _steal(weights)
        for _ in weights:
            pass
        return set()
