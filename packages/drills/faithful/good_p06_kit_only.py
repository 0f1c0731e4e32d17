"""A stranger's P06 from the kit's words alone: one torch.gather along T at lengths - 1;
the rejection the kit names (a length of 0 or past T), checked with two reductions, the
rest left to torch."""

VARIABLE = "DRILL_P06_MODULE"


def gather_last_token(hidden, lengths):
    steps = hidden.shape[1]
    if bool(((lengths < 1) | (lengths > steps)).any()):
        raise ValueError(f"lengths must lie in 1..{steps}")
    index = (lengths.long() - 1).view(-1, 1, 1).expand(-1, 1, hidden.shape[2])
    return hidden.gather(1, index).squeeze(1)
