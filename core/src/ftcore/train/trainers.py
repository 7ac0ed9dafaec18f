"""What every trainer shares: records as a datasets.Dataset, and resuming mid-epoch in the same data order (each
trainer: methods/)."""
from __future__ import annotations


def as_dataset(records):
    if records is None:
        return None
    from datasets import Dataset

    # `metadata` marks augmented records (how each was made); it is provenance, never a training column.
    return Dataset.from_list([{k: v for k, v in record.items() if k != "metadata"} for record in records])


def resume_in_the_same_data_order() -> None:
    """Upstream bug, worked around here only: when a run resumes mid-epoch, transformers' Trainer skips the batches
    already trained with accelerate's `skip_first_batches`, which (accelerate 1.11, data_loader.py) builds a new
    DataLoaderShard whose `iteration` starts at 0; its __iter__ then calls set_epoch(0) on the shared seedable
    sampler, so the resumed epoch is drawn in epoch 0's order instead of its own. The copy is given the original's
    iteration (the epoch the Trainer set). tests/test_guards.py compares a resumed run with an uninterrupted one."""
    import transformers.trainer as hf

    if getattr(hf.skip_first_batches, "keeps_epoch", False):
        return
    original = hf.skip_first_batches

    def skip_first_batches(dataloader, num_batches=0):
        skipped = original(dataloader, num_batches)
        if hasattr(dataloader, "iteration") and hasattr(skipped, "iteration"):
            skipped.iteration = dataloader.iteration
        return skipped

    skip_first_batches.keeps_epoch = True
    hf.skip_first_batches = skip_first_batches
