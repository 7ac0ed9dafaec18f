"""A run's model, processing class and trainer, loaded and built as training and pre-flight's measured steps use them."""
from __future__ import annotations

import os

from .. import events
from . import distributed
from .spec import Options


def setup(spec: Options, train_records, test_records, mode, plan=None):
    """Builds the TRL trainer with the protocol callbacks attached (no training yet); `plan`: memory.memory_plan
    (default: neither FSDP nor gradient checkpointing)."""
    from transformers import set_seed

    from .callbacks import STOP_FILE_ENV, CancelOnSigterm, ProtocolCallback, StopWhenAsked, TokenCounter
    from .configs import peft_config, trainer_config
    from .device import model_kwargs
    from .memory import MemoryPlan
    from .methods import build_trainer

    tokenizer, model = load_for_training(spec, model_kwargs(spec))
    if spec.method == "QLoRA":
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(model)
    plan = plan or MemoryPlan()
    if plan.fsdp:
        distributed.allow_fsdp_on_cpu()
    config = trainer_config(spec, plan)
    # TRL wraps the model in PEFT (random LoRA init) before the Trainer seeds torch: seed first, so equal specs start
    # from equal adapters.
    set_seed(spec.hyperparameters.seed)
    lora = peft_config(spec)
    if spec.init_adapter:  # continuing another job: its adapter, trainable, instead of a new one
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, spec.init_adapter, is_trainable=True)
        lora = None
        events.emit(events.Log(level="info", message=f"continuing the adapter in {spec.init_adapter} (its rank and "
                                                     "targets; lora_rank, lora_alpha and lora_dropout are not used)"))
    trainer = build_trainer(spec, model, tokenizer, config, lora, train_records, test_records)
    tokens = TokenCounter()
    tokens.wrap(trainer)
    cancel = CancelOnSigterm()
    protocol = ProtocolCallback(tokens, spec.eval_config.compute_eval_metrics)
    if spec.eval_config.graders:  # before the protocol, which reports the evaluation's metrics
        from .valid_score import ValidScore

        ev = spec.eval_config
        trainer.add_callback(ValidScore(ev.graders, test_records or [], ev.grader_samples, ev.grader_max_new_tokens))
    trainer.add_callback(protocol)
    trainer.add_callback(cancel)
    if os.environ.get(STOP_FILE_ENV):
        trainer.add_callback(StopWhenAsked(os.environ[STOP_FILE_ENV]))
    protocol.diverged.watch(trainer)
    trainer.add_callback(protocol.diverged)
    if spec.eval_config.early_stopping_patience:
        from transformers import EarlyStoppingCallback

        trainer.add_callback(EarlyStoppingCallback(early_stopping_patience=spec.eval_config.early_stopping_patience))
    return trainer, cancel, protocol


def load_for_training(spec: Options, kwargs: dict):
    """(processing class, model): tokenizer and causal LM; for modality vision the processor and image-text model."""
    if spec.modality == "vision":
        from ..models.vision import load_model

        return load_processing_class(spec), load_model(spec.base_model, **kwargs)
    from transformers import AutoModelForCausalLM

    tokenizer, model = load_processing_class(spec), AutoModelForCausalLM.from_pretrained(spec.base_model, **kwargs)
    return only_what_the_model_takes(tokenizer, model), model


def only_what_the_model_takes(tokenizer, model):
    """The tokenizer makes only the inputs the model's forward takes: a tokenizer saved with token_type_ids among its
    model_input_names (transformers' default for a PreTrainedTokenizerFast, as SmolLM2's imports had, #38) made
    GRPO's sampling pass them to generate, which refuses what the model does not take."""
    import inspect

    takes = inspect.signature(model.forward).parameters  # the inputs a forward names (not its **kwargs)
    tokenizer.model_input_names = [n for n in tokenizer.model_input_names if n in takes]
    return tokenizer


def load_processing_class(spec: Options):
    """The tokenizer (pad token set) or, for modality vision, the processor that training uses."""
    if spec.modality == "vision":
        from ..models.vision import load_processor

        return load_processor(spec.base_model)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(spec.base_model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer
