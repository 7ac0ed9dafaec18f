"""How a run fits in memory: FSDP or DDP, gradient checkpointing or not, from pre-flight's estimate and what each process
has (preflight/memory.py makes the estimate)."""
from __future__ import annotations

import os
from dataclasses import dataclass

from . import device
from .spec import Options

HEADROOM = 1.1  # allocator fragmentation, CUDA context, temporaries


# Share of a process's memory (a GPU's free memory; on CPU the host's available memory over the processes of the
# job) that pre-flight's estimate may take before the run saves memory.
MEMORY_SHARE = 0.9


@dataclass(frozen=True)
class MemoryPlan:
    """How a run fits in memory: Full weights, gradients and optimizer state sharded over the job's processes
    (FSDP) instead of copied on each (DDP), and activations recomputed in the backward pass instead of kept
    (gradient checkpointing). `reasons` are said to the user as log events."""

    fsdp: bool = False
    checkpointing: bool = False
    reasons: tuple[str, ...] = ()


def memory_plan(spec: Options, memory: dict | None) -> MemoryPlan:
    """The plan for pre-flight's memory estimate (preflight/memory.py; None when there is none), alike on every rank.

    - FSDP: for Full on several processes, when the estimate is above MEMORY_SHARE of what one process has (the model
      does not fit one device), or when FTCORE_SHARDING (the worker's TRAIN_SHARDING) is "fsdp"; "ddp" never shards.
      LoRA and QLoRA train their small adapters with DDP: each process holds the frozen base.
    - Gradient checkpointing (about a third more compute per step): on CUDA only, when the per-process estimate
      (sharded, under FSDP) is above MEMORY_SHARE of the GPU's free memory, or when there is no estimate. Never on
      CPU, where the host's memory holds the activations.

    Every rank takes both decisions from its own memory, then they are agreed (one rank's need is every rank's), so
    no rank wraps the model differently from the others."""
    from . import distributed

    world = int(os.environ.get("WORLD_SIZE", "1"))
    choice = os.environ.get("FTCORE_SHARDING", "auto")
    cuda = device.device_is_cuda(spec)
    available = _process_memory(cuda, world)
    budget = MEMORY_SHARE * available
    peak = memory["estimated_peak_bytes"] if memory else None
    reasons: list[str] = []
    fsdp = False
    if world > 1 and spec.method == "Full" and choice != "ddp":
        fsdp = choice == "fsdp" or (peak is not None and peak > budget)
    if choice == "fsdp" and world > 1 and spec.method != "Full":
        reasons.append(f"TRAIN_SHARDING fsdp applies to Full; {spec.method} trains its adapter with DDP")
    fsdp = distributed.any_rank(fsdp)
    if fsdp:
        reasons.append(f"FSDP: the weights, gradients and optimizer state are sharded over the {world} processes "
                       + ("(TRAIN_SHARDING fsdp)" if choice == "fsdp" else
                          f"(the estimated peak of {_gib(peak)} is above {MEMORY_SHARE:.0%} of the {_gib(available)} "
                          "one process has)"))
    if peak is not None and fsdp:
        sharded = memory["weights_bytes"] + memory["training_state_bytes"]
        peak = round((sharded / world + memory["activations_bytes"]) * HEADROOM)
    checkpointing = distributed.any_rank(cuda and (peak is None or peak > budget))
    if checkpointing:
        reasons.append("gradient checkpointing on: " + (
            f"the estimated peak of {_gib(peak)} per process is above {MEMORY_SHARE:.0%} of the GPU's free "
            f"{_gib(available)}" if peak is not None else "no memory estimate"))
    return MemoryPlan(fsdp=fsdp, checkpointing=checkpointing, reasons=tuple(reasons))


def _process_memory(cuda: bool, world: int) -> int:
    """Bytes one process has: its GPU's free memory, or its share of the host's available memory (the job's
    processes on one machine share it)."""
    if cuda:
        import torch

        free, _ = torch.cuda.mem_get_info(int(os.environ.get("LOCAL_RANK", 0)))
        return free
    import psutil

    return psutil.virtual_memory().available // int(os.environ.get("LOCAL_WORLD_SIZE", world))


def _gib(size: float) -> str:
    return f"{size / 2**30:.1f} GiB"
