"""methods: one module per trainer (sft, dpo, orpo, grpo), each with its dataset mode (MODE), the settings that only
some trainers read and it does (SETTINGS), its TRL config (trainer_config), its rows as pre-flight counts them
(token_row) and its trainer (build_trainer); dispatched from TRAINERS. The mode and the settings are the training
contract's (contract.py)."""
from __future__ import annotations

from types import ModuleType

from ..spec import Options
from ..trainers import resume_in_the_same_data_order
from . import dpo, grpo, orpo, sft

TRAINERS: dict[str, ModuleType] = {"sft": sft, "dpo": dpo, "orpo": orpo, "grpo": grpo}


def setting_readers() -> dict[str, set[str]]:
    """Each setting that only some trainers read → those trainers (the training API states the same as x-trainers)."""
    readers: dict[str, set[str]] = {}
    for name, method in TRAINERS.items():
        for setting in method.SETTINGS:
            readers.setdefault(setting, set()).add(name)
    return readers


def method_of(spec: Options) -> ModuleType:
    return TRAINERS[spec.trainer_type]


def build_trainer(spec: Options, model, tokenizer, config, peft_config, train_records, test_records):
    """The TRL trainer for spec.trainer_type over records already validated."""
    resume_in_the_same_data_order()
    common = dict(model=model, args=config, processing_class=tokenizer, peft_config=peft_config)
    return method_of(spec).build_trainer(spec, common, train_records, test_records)
