"""train: SFT, DPO, ORPO and GRPO with LoRA, QLoRA or full fine-tuning (TRL + PEFT)."""
