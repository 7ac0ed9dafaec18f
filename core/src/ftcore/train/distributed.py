"""One job across several processes (torchrun sets RANK/WORLD_SIZE; the Trainer starts the process group: gloo on
CPU, NCCL on CUDA). Every rank trains on its shard of each global batch; only rank 0 speaks: its events, its
checkpoints, its artifacts. Decisions a rank takes alone (stop on SIGTERM, stop on a non-finite loss) are agreed on
by all ranks at each step end, so no rank waits forever in a collective the others left."""
from __future__ import annotations

import os


def rank() -> int:
    """This process's rank (0 when not launched by torchrun)."""
    return int(os.environ.get("RANK", "0"))


def is_main() -> bool:
    return rank() == 0


def _group():
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


def world() -> tuple[int, str] | None:
    """(world size, backend) once the process group is up with more than one process; else None."""
    dist = _group()
    if dist is None or dist.get_world_size() < 2:
        return None
    return dist.get_world_size(), str(dist.get_backend())


def _reduce(value: int, op: str) -> int:
    dist = _group()
    if dist is None:
        return value
    import torch

    device = f"cuda:{torch.cuda.current_device()}" if dist.get_backend() == "nccl" else "cpu"
    tensor = torch.tensor([value], dtype=torch.int64, device=device)
    dist.all_reduce(tensor, op=getattr(dist.ReduceOp, op))
    return int(tensor.item())


def any_rank(flag: bool) -> bool:
    """True on every rank when it is true on one (a collective: every rank must call it at the same point)."""
    return bool(_reduce(int(flag), "MAX"))


def sum_ranks(value: int) -> int:
    """The sum over ranks (a collective, as any_rank)."""
    return _reduce(value, "SUM")
