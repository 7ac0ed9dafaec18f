"""The baseline: a plain TRL SFTTrainer script. The objective (data, LoRA, learning rate, batch, steps, seed,
assistant-only loss) is the same as the core's run; every throughput setting is TRL's and torch's default (on a GPU:
the weights in the dtype they were saved in, bf16 autocast, TRL's gradient checkpointing, padded batches, sdpa) but
one: on CPU, bf16 is off. TRL 0.24's SFTConfig turns bf16 autocast on by default, on CPU too, where a CPU without
bf16 matrix instructions (this machine's) multiplies bf16 in torch's single-threaded fallback GEMM: the 4 steps of
bench/train/run.py had not finished after 13 minutes, where in float32 the whole bench (both runs) takes 3.6; a
baseline no one would keep. The core trains in float32 on CPU.

    python trl_baseline.py SPEC.json   (the core's training spec; prints a JSON line per step: step, seconds and
                                        tokens since training began, loss; then one with the totals)
"""
import json
import sys
import time

from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback, set_seed
from trl import SFTConfig, SFTTrainer

spec = json.load(open(sys.argv[1]))
hp = spec["hyperparameters"]
cpu = spec.get("device") == "cpu"


class Clock(TrainerCallback):
    """Tokens and seconds from the start of training to each logged step (as the core's progress events)."""

    def __init__(self):
        self.start, self.seconds, self.loss, self.trainer = 0.0, 0.0, None, None

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.monotonic()

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.seconds, self.loss = time.monotonic() - self.start, logs["loss"]
            print(json.dumps({"step": state.global_step, "seconds": self.seconds, "loss": self.loss,
                              "tokens": self.trainer._total_train_tokens}), flush=True)


tokenizer = AutoTokenizer.from_pretrained(spec["base_model"])
model = AutoModelForCausalLM.from_pretrained(spec["base_model"], **({} if cpu else {"dtype": "auto"}))
config = SFTConfig(
    output_dir=spec["output_dir"], max_length=hp["max_length"], learning_rate=hp["learning_rate"],
    per_device_train_batch_size=hp["batch_size"], gradient_accumulation_steps=hp["gradient_accumulation_steps"],
    max_steps=hp["max_steps"], lr_scheduler_type=hp["lr_scheduler_type"], warmup_ratio=hp["warmup_ratio"],
    max_grad_norm=hp["max_grad_norm"], adam_beta1=hp["adam_beta1"], adam_beta2=hp["adam_beta2"], seed=hp["seed"],
    data_seed=hp["seed"], logging_steps=1, save_strategy="no", report_to=[], assistant_only_loss=True,
    use_cpu=cpu, bf16=not cpu, disable_tqdm=True)
lora = LoraConfig(r=hp["lora_rank"], lora_alpha=hp["lora_alpha"], lora_dropout=hp["lora_dropout"],
                  target_modules="all-linear", task_type="CAUSAL_LM")
clock = Clock()
set_seed(hp["seed"])  # the LoRA init happens in SFTTrainer, before the Trainer seeds torch
trainer = SFTTrainer(model=model, args=config, processing_class=tokenizer, peft_config=lora,
                     train_dataset=load_dataset("json", data_files=spec["train_file"], split="train"),
                     callbacks=[clock])
clock.trainer = trainer
trainer.train()
print(json.dumps({"tokens": trainer._total_train_tokens, "seconds": clock.seconds, "loss": clock.loss}))
