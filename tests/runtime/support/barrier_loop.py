"""Support script: every rank joins the group, says so, then meets the others in a barrier twice a second
for ten minutes; a rank (or node) that dies breaks the others' barrier."""
import os
import time

import torch.distributed as dist

dist.init_process_group("gloo")
print(f"rank {dist.get_rank()} up", flush=True)
if os.environ.get("BARRIER_LOOP_READY"):
    # A test waits for every rank to be here (its monitor running) before it kills a node.
    open(os.path.join(os.environ["BARRIER_LOOP_READY"], f"rank{dist.get_rank()}"), "w").close()
for _ in range(1200):
    dist.barrier()
    time.sleep(0.5)
dist.destroy_process_group()
