"""One job across several processes (torchrun sets RANK/WORLD_SIZE; `start` makes the process group before the
Trainer, which uses it: gloo on CPU, NCCL on CUDA with gloo beside it for CPU tensors). Every rank trains on its
shard of each global batch; only rank 0 speaks: its events, its checkpoints, its artifacts. Decisions a rank takes
alone (stop on SIGTERM, stop on a non-finite loss) are agreed on by all ranks at each step end, so no rank waits
forever in a collective the others left."""
from __future__ import annotations

import os


def rank() -> int:
    """This process's rank (0 when not launched by torchrun)."""
    return int(os.environ.get("RANK", "0"))


def is_main() -> bool:
    return rank() == 0


def start(cuda: bool) -> None:
    """Starts the process group of a job launched by torchrun (nothing for one process), early: decisions taken before
    the Trainer exists (memory.memory_plan) are agreed over it. Accelerate finds it started and keeps it."""
    if int(os.environ.get("WORLD_SIZE", "1")) < 2:
        return
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    # FSDP gathers the full state dict for saving on the CPU: gloo carries those tensors
    dist.init_process_group("cuda:nccl,cpu:gloo" if cuda else "gloo")


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

    device = f"cuda:{torch.cuda.current_device()}" if dist.get_backend() == "nccl" else "cpu"  # else gloo is there
    tensor = torch.tensor([value], dtype=torch.int64, device=device)
    dist.all_reduce(tensor, op=getattr(dist.ReduceOp, op))
    return int(tensor.item())


def any_rank(flag: bool) -> bool:
    """True on every rank when it is true on one (a collective: every rank must call it at the same point)."""
    return bool(_reduce(int(flag), "MAX"))


def sum_ranks(value: int) -> int:
    """The sum over ranks (a collective, as any_rank)."""
    return _reduce(value, "SUM")


def allow_fsdp_on_cpu() -> None:
    """Lets the Trainer shard over CPU processes. accelerate 1.11 takes the FSDP plugin only for GPU-like devices
    (AcceleratorState.__init__ sets distributed_type FSDP in its MULTI_GPU/NPU/… branch; MULTI_CPU keeps DDP), while
    torch's FSDP2 shards over gloo on CPU as well. A Full job on several CPU processes of one host, each of which
    would otherwise hold the whole model, gradients and Adam moments, needs it as a GPU job does; and it is how this
    path is tested without a GPU. The one place accelerate is worked around: after its state is made, a MULTI_CPU
    state given an FSDP plugin becomes FSDP with it, as a MULTI_GPU one would."""
    import torch

    if torch.cuda.is_available():
        return
    from accelerate.state import AcceleratorState, PartialState
    from accelerate.utils import DistributedType

    made = AcceleratorState.__init__
    if getattr(made, "allows_fsdp_on_cpu", False):
        return

    def init(self, *args, fsdp_plugin=None, **kwargs):
        made(self, *args, fsdp_plugin=fsdp_plugin, **kwargs)
        if fsdp_plugin is not None and self.distributed_type == DistributedType.MULTI_CPU:
            self.distributed_type, self.fsdp_plugin = DistributedType.FSDP, fsdp_plugin
            # as accelerate does at the end of its own init: a later AcceleratorState() copies PartialState's type
            PartialState._shared_state["distributed_type"] = DistributedType.FSDP

    init.allows_fsdp_on_cpu = True
    AcceleratorState.__init__ = init
