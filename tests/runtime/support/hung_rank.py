"""Support script: rank 1 hangs (sleeps) while rank 0 waits for it in a collective. Never finishes."""
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
print(f"rank {dist.get_rank()} up", flush=True)
if dist.get_rank() == 1:
    time.sleep(3600)
dist.barrier()
torch.zeros(1)
