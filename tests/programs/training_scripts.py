"""Hypothesis strategies for training-script-shaped programs, shared by the fixer's property tests."""
from hypothesis import strategies as st

HEADER = """import copy

import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed.fsdp import fully_shard
"""

OPTIMIZERS = ("SGD", "Adam", "AdamW", "Adagrad", "RMSprop")
PLACEMENTS = (
    "{m}.cuda()",
    "{m} = {m}.to(device)",
    "{m}.to(device)",
    "{m}.half()",
    "{m} = {m}.double()",
    "{m}.to(torch.bfloat16)",
    "{m} = DDP({m}, device_ids=[rank])",
    "fully_shard({m})",
    "{m} = copy.deepcopy({m})",
    "{m} = torch.compile({m})",
    "{m}.to_empty(device=device)",
    "{m}.load_state_dict(sd, assign=True)",
)
UNRELATED = (
    "x = x.to(device)",
    "criterion = nn.MSELoss().to(device)",
    "print('step', step)",
    "step = 0",
    "other.cuda()",
    "batch = {k: v.to(device) for k, v in batch.items()}",
)


@st.composite
def statements(draw, model: str, holder: str, depth: int = 0):
    """One statement (possibly compound) of a script, indented by `depth`."""
    pad = "    " * depth
    kind = draw(st.sampled_from(["placement", "placement", "unrelated", "branch", "loop", "load", "with"]))
    if kind == "placement":
        return [pad + draw(st.sampled_from(PLACEMENTS)).format(m=model)]
    if kind == "unrelated":
        return [pad + draw(st.sampled_from(UNRELATED))]
    if kind == "load":
        return [pad + f"{holder}.load_state_dict(state)"]
    if depth >= 2:
        return [pad + "pass"]
    inner = draw(st.lists(statements(model, holder, depth + 1), min_size=1, max_size=2))
    head = {"branch": "if args.cuda:", "loop": "for step in range(2):", "with": "with torch.no_grad():"}[kind]
    return [pad + head] + [line for block in inner for line in block]


@st.composite
def scripts(draw):
    """A whole script: header, model, optimizer (and dependants), then a mix of moves and other code."""
    in_function = draw(st.booleans())
    model = draw(st.sampled_from(["model", "net", "encoder"]))
    holder = draw(st.sampled_from(["optimizer", "opt"]))
    lines = [f"{model} = Net()"]
    if draw(st.booleans()):
        lines.append("other = Net()")
    optimizer = draw(st.sampled_from(OPTIMIZERS))
    lines.append(f"{holder} = torch.optim.{optimizer}({model}.parameters(), lr=0.1)")
    if draw(st.booleans()):
        lines.append(f"scheduler = torch.optim.lr_scheduler.StepLR({holder}, step_size=1)")
    if draw(st.booleans()):
        lines.append(f"{holder}.load_state_dict(state)")
    for block in draw(st.lists(statements(model, holder), min_size=1, max_size=5)):
        lines.extend(block)
    lines += [
        "for x, y in loader:",
        f"    loss = {model}(x).sum()",
        "    loss.backward()",
        f"    {holder}.step()",
    ]
    if in_function:
        body = "\n".join("    " + line if line else line for line in lines)
        return HEADER + "\n\ndef main(args, device, rank, loader, state, sd):\n" + body + "\n"
    return HEADER + "\n" + "\n".join(lines) + "\n"
