"""A Tinker training session: one base model with a LoRA adapter and its AdamW optimizer, kept loaded while a client's
own loop calls the primitives (forward_backward, optim_step, sample, save/load), as a Tinker TrainingClient does.

Gradients accumulate across forward_backward calls until optim_step, as Tinker's do; every loss is a sum over tokens
(losses.py). The model stays in eval mode: no dropout, so forward() and forward_backward() see the same function.

save_weights_for_sampler's folders are also kept in memory (the last few), so that sample(weights=folder) draws from
the weights of that moment however many optim_steps came since, as a Tinker sampling client made for them does.
"""
from __future__ import annotations

import json
import math
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import SpecError
from . import losses
from .lora import LoraSpec, lora_config
from .sampling import SampleOutput, SamplingParams, sample

SESSION_FILE = "tinker_session.json"
OPTIMIZER_FILE = "optimizer.pt"
ADAPTER_FILE = "adapter_model.safetensors"
# save_weights_for_sampler snapshots kept in memory (on the CPU), the least recently used dropped first; one dropped is
# read back from its folder when sampled from.
SNAPSHOTS_IN_MEMORY = 4


@dataclass
class Datum:
    """One sequence: its token ids, and the loss_fn_inputs aligned with them (position i predicts target_tokens[i]);
    each input is array-like (a list, numpy or torch), [N] or, for top-k targets, [N, K]."""

    model_input: list[int]
    loss_fn_inputs: dict[str, Any]


@dataclass
class AdamParams:
    """Tinker's AdamParams and defaults (tinker/types/optimizer.py): AdamW, decoupled weight decay, clipping off at 0."""

    learning_rate: float = 1e-4
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-12
    weight_decay: float = 0.0
    grad_clip_norm: float = 0.0


@dataclass
class ForwardBackwardOutput:
    """Per datum {"logprobs": float32 array, target_tokens' shape}; metrics keyed `name:reduction` (the SDK splits
    each key on its one colon to combine chunks, tinker/lib/chunked_fwdbwd_helpers.py)."""

    loss_fn_outputs: list[dict[str, np.ndarray]]
    metrics: dict[str, float]


class TrainingSession:
    def __init__(self, model, tokenizer, spec: LoraSpec, max_batch_tokens: int):
        self.model, self.tokenizer, self.spec = model, tokenizer, spec
        self.max_batch_tokens = max_batch_tokens
        self.device = next(model.parameters()).device
        self.parameters = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.parameters)
        self.step = 0
        # Samples without a seed of their own draw from here, so a seeded session is reproducible end to end.
        self.generator = torch.Generator(self.device).manual_seed(spec.seed)
        # Which weights the adapter holds: every optim_step and load_state moves it on, never back.
        self.weights_version = 0
        # The adapter file's key of each trainable parameter (PEFT's names, without the adapter's).
        self._adapter_keys = _adapter_keys(model, self.parameters)
        # Folder (resolved) → the weights_version its adapter was saved at, for every folder this session wrote; and
        # the CPU copies of the latest save_weights_for_sampler ones (or of folders sampled from), most recent last.
        self._saved_versions: dict[str, int] = {}
        self._snapshots: OrderedDict[str, list[torch.Tensor]] = OrderedDict()

    @classmethod
    def create(cls, spec: LoraSpec, device: str = "auto", max_batch_tokens: int = 8192) -> TrainingSession:
        from peft import get_peft_model
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if not Path(spec.base_model, "config.json").is_file():
            raise SpecError.at("base_model", f"{spec.base_model} is not a model folder (no config.json)")
        target = "cuda" if device != "cpu" and torch.cuda.is_available() else "cpu"
        cuda = target == "cuda"
        dtype = torch.bfloat16 if cuda and torch.cuda.is_bf16_supported() else torch.float32
        base = AutoModelForCausalLM.from_pretrained(spec.base_model, dtype=dtype,
                                                    attn_implementation="sdpa" if cuda else "eager").to(target)
        torch.manual_seed(spec.seed)  # the LoRA A matrices' initialisation
        # PEFT keeps the adapter in float32 over a bfloat16 base (autocast_adapter_dtype).
        model = get_peft_model(base, lora_config(base, spec))
        model.eval()
        return cls(model, AutoTokenizer.from_pretrained(spec.base_model), spec, max_batch_tokens)

    @classmethod
    def from_state(cls, path: str, base_model: str | None = None, with_optimizer: bool = False, device: str = "auto",
                   max_batch_tokens: int = 8192) -> TrainingSession:
        """A session made from a save_state folder: its LoRA settings, weights and, with_optimizer, optimizer."""
        saved = _read_session_file(path)
        spec = LoraSpec(**{**saved["lora"], "base_model": base_model or saved["lora"]["base_model"]})
        session = cls.create(spec, device, max_batch_tokens)
        session.load_state(path, with_optimizer)
        return session

    # --- training -------------------------------------------------------------------------------------------------

    def forward_backward(self, data: list[Datum], loss_fn: str, loss_fn_config: dict[str, float] | None = None,
                         forward_only: bool = False) -> ForwardBackwardOutput:
        """Target logprobs and the summed loss of every datum; unless forward_only, the loss's gradients are added to
        those accumulated since the last optim_step. A call that fails leaves the gradients as they were."""
        loss, config = losses.resolve(loss_fn, loss_fn_config)
        rows = [self._tensors(datum, loss, n) for n, datum in enumerate(data)]
        if not rows:
            raise SpecError.at("data", "forward_backward needs at least one datum")
        with self._added_to_accumulated_gradients(), torch.set_grad_enabled(not forward_only):
            # A loss or gradient that is not finite raises in here, so that the call's gradients are dropped: one NaN
            # applied by optim_step would spoil the weights and Adam's moments for good.
            outputs, total = self._run_batches(rows, loss, loss_fn, config, forward_only)
            if not forward_only:
                self._check_gradients(loss_fn, total)
        return ForwardBackwardOutput(outputs, {"loss:sum": total})

    def optim_step(self, params: AdamParams) -> dict[str, float]:
        """One AdamW step over the adapter with exactly these hyperparameters (they may change every call), clipping
        the global gradient norm first when grad_clip_norm > 0; then the gradients are cleared."""
        if params.learning_rate < 0 or params.eps < 0 or params.weight_decay < 0 or params.grad_clip_norm < 0 \
                or not (0 <= params.beta1 < 1 and 0 <= params.beta2 < 1):
            raise SpecError.at("adam_params", "learning_rate, eps, weight_decay and grad_clip_norm must be ≥ 0, "
                                              "beta1 and beta2 in [0, 1)")
        for group in self.optimizer.param_groups:
            group.update(lr=params.learning_rate, betas=(params.beta1, params.beta2), eps=params.eps,
                         weight_decay=params.weight_decay)
        limit = params.grad_clip_norm if params.grad_clip_norm > 0 else math.inf
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.parameters, limit))
        self.weights_version += 1  # before the step: one that fails midway may have changed some weights
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        return {"grad_norm:mean": grad_norm, "learning_rate:mean": params.learning_rate}

    def sample(self, prompt: list[int], num_samples: int = 1, params: SamplingParams | None = None,
               prompt_logprobs: bool = False, weights: str | None = None) -> SampleOutput:
        """Samples (sampling.sample) from the current weights, or with `weights` from those a save_weights_for_sampler
        to that folder saved (or any folder holding an adapter of this session's shape). Other weights are swapped into
        the adapter for the call only: the current ones, their accumulated gradients and the optimizer are untouched."""
        def draw() -> SampleOutput:
            return sample(self.model, self.tokenizer, prompt, num_samples, params or SamplingParams(), prompt_logprobs,
                          self.generator)

        if weights is None:
            return draw()
        key = _folder_key(weights)
        if self._saved_versions.get(key) == self.weights_version:
            return draw()  # saved since the last change: they are the current weights
        with self._swapped_in(self._snapshot(key, weights)):
            return draw()

    # --- checkpoints ----------------------------------------------------------------------------------------------

    def save_weights_for_sampler(self, path: str) -> str:
        """The adapter in PEFT's format with the tokenizer, as training saves one: serve and merge load it. A copy stays
        in memory too, for sample(weights=path)."""
        self._write_adapter(path)
        key = _folder_key(path)
        self._remember(key, [p.detach().to("cpu", copy=True) for p in self.parameters])
        return path

    def save_state(self, path: str) -> str:
        """The adapter, the optimizer's state and step count, and the LoRA settings a session is recreated from."""
        self._write_adapter(path)
        # sample(weights=path) may name this folder too: read from disk, unless the weights are still these.
        self._snapshots.pop(_folder_key(path), None)
        torch.save({"optimizer": self.optimizer.state_dict(), "generator": self.generator.get_state()},
                   Path(path, OPTIMIZER_FILE))
        Path(path, SESSION_FILE).write_text(json.dumps({"lora": asdict(self.spec), "step": self.step}, indent=2))
        return path

    def load_state(self, path: str, with_optimizer: bool = True) -> None:
        """Loads a save_state folder into this session (same LoRA settings); without the optimizer, the optimizer
        starts afresh. Accumulated gradients are dropped."""
        from peft.utils import get_peft_model_state_dict, set_peft_model_state_dict
        from safetensors.torch import load_file

        saved = _read_session_file(path)
        mine = {k: v for k, v in asdict(self.spec).items() if k not in ("base_model", "seed")}
        theirs = {k: v for k, v in saved["lora"].items() if k not in ("base_model", "seed")}
        if mine != theirs:
            raise SpecError.at("path", f"{path} holds an adapter of {theirs}; this session's is {mine}")
        weights = load_file(Path(path, ADAPTER_FILE), device=str(self.device))
        # Checked before anything is loaded: a folder whose tensors do not fit (another model's, a damaged file) must
        # leave this session's weights as they were.
        state = get_peft_model_state_dict(self.model, save_embedding_layers=False)  # as _write_adapter saves it
        mine = {key: tuple(value.shape) for key, value in state.items()}
        if {key: tuple(value.shape) for key, value in weights.items()} != mine:
            raise SpecError.at("path", f"{path}'s adapter does not fit this model (its tensors' names or shapes differ)")
        self.weights_version += 1  # before loading: a load that fails midway may have changed some weights
        result = set_peft_model_state_dict(self.model, weights)
        if result.unexpected_keys or any("lora_" in key for key in result.missing_keys):
            raise SpecError.at("path", f"{path}'s adapter does not fit this model")
        self.optimizer.zero_grad(set_to_none=True)
        if with_optimizer:
            # On the CPU: load_state_dict moves the moments to their parameters, and a generator state stays there.
            state = torch.load(Path(path, OPTIMIZER_FILE), map_location="cpu")
            self.optimizer.load_state_dict(state["optimizer"])
            self.generator.set_state(state["generator"])
            self.step = saved["step"]
        else:
            self.optimizer = torch.optim.AdamW(self.parameters)
            self.step = 0

    def info(self) -> dict:
        weights = next(self.model.parameters())
        return {**asdict(self.spec), "step": self.step, "device": weights.device.type,
                "dtype": str(weights.dtype).removeprefix("torch."), "vocab_size": self._vocab_size(),
                "max_context_length": self._context(), "target_modules": sorted(self.model.peft_config["default"]
                                                                                .target_modules)}

    # --- internals ------------------------------------------------------------------------------------------------

    def _write_adapter(self, path: str) -> None:
        self.model.save_pretrained(path, save_embedding_layers=False)
        self.tokenizer.save_pretrained(path)
        self._saved_versions[_folder_key(path)] = self.weights_version

    def _remember(self, key: str, tensors: list[torch.Tensor]) -> None:
        self._snapshots[key] = tensors
        self._snapshots.move_to_end(key)
        while len(self._snapshots) > SNAPSHOTS_IN_MEMORY:
            self._snapshots.popitem(last=False)

    def _snapshot(self, key: str, path: str) -> list[torch.Tensor]:
        """The adapter tensors saved to `path` (aligned with self.parameters, on the CPU): from memory, else read from
        the folder and kept in memory."""
        if key in self._snapshots:
            self._snapshots.move_to_end(key)
            return self._snapshots[key]
        from safetensors.torch import load_file

        file = Path(path, ADAPTER_FILE)
        if not file.is_file():
            raise SpecError.at("weights", f"weights {path!r}: no save_weights_for_sampler of this session saved them "
                                          f"and {path} holds no adapter ({ADAPTER_FILE})")
        saved = load_file(file, device="cpu")
        missing = [k for k in self._adapter_keys if k not in saved]
        extra = sorted(set(saved) - set(self._adapter_keys))
        misshapen = [k for k, p in zip(self._adapter_keys, self.parameters) if k in saved and saved[k].shape != p.shape]
        if missing or extra or misshapen:
            raise SpecError.at("weights", f"weights {path!r}: its adapter does not fit this session's (missing "
                                          f"{missing[:3]}, unexpected {extra[:3]}, of another shape {misshapen[:3]})")
        tensors = [saved[k] for k in self._adapter_keys]
        self._remember(key, tensors)
        return tensors

    @contextmanager
    def _swapped_in(self, tensors: list[torch.Tensor]):
        """The adapter holds `tensors` in its body, its own weights again after: the same tensors, so bit for bit.
        Only the parameters' data changes hands: their gradients and the optimizer's state (keyed by parameter) stay."""
        current = [p.data for p in self.parameters]
        try:
            for p, tensor in zip(self.parameters, tensors):
                p.data = tensor.to(device=p.device, dtype=p.dtype)
            yield
        finally:
            for p, tensor in zip(self.parameters, current):
                p.data = tensor

    def _vocab_size(self) -> int:
        return self.model.get_output_embeddings().weight.shape[0]

    def _context(self) -> int | None:
        return getattr(self.model.config, "max_position_embeddings", None)

    @contextmanager
    def _added_to_accumulated_gradients(self):
        """Runs its body on cleared gradients and adds the accumulated ones back after; a body that fails (say, out of
        memory after some batches' backward) leaves them as they were."""
        before = [p.grad for p in self.parameters]
        for p in self.parameters:
            p.grad = None
        try:
            yield
        except BaseException:
            for p, grad in zip(self.parameters, before):
                p.grad = grad
            raise
        for p, grad in zip(self.parameters, before):
            if grad is not None:
                p.grad = grad if p.grad is None else p.grad.add_(grad)

    def _tensors(self, datum: Datum, loss: losses.Loss, n: int) -> dict[str, torch.Tensor]:
        """A datum's tokens and the inputs its loss reads, as tensors on the device, checked against one another."""
        where = f"data[{n}]"
        tokens = _integers(datum.model_input, f"{where}.model_input")
        given = datum.loss_fn_inputs
        missing = [name for name in ("target_tokens", *loss.inputs) if name not in given]
        if missing:
            raise SpecError.at(f"{where}.loss_fn_inputs", f"{where} lacks loss_fn_inputs {missing}")
        targets = _integers(given["target_tokens"], f"{where}.loss_fn_inputs.target_tokens")
        if tokens.ndim != 1 or not len(tokens) or targets.ndim not in (1, 2) or len(targets) != len(tokens):
            raise SpecError.at(where, f"{where}: model_input must be N > 0 token ids and target_tokens [N] or [N, K] "
                                      f"(got {list(tokens.shape)} and {list(targets.shape)})")
        vocab, context = self._vocab_size(), self._context()
        if min(tokens.min(), targets.min()) < 0 or max(tokens.max(), targets.max()) >= vocab:
            raise SpecError.at(where, f"{where}: token ids must lie in [0, {vocab})")
        if context and len(tokens) > context:
            raise SpecError.at(where, f"{where}: {len(tokens)} tokens exceed the model's context of {context}")
        row = {"tokens": tokens, "target_tokens": targets}
        for name in (*loss.inputs, *loss.optional):
            if name in given:
                value = torch.as_tensor(np.asarray(given[name], dtype=np.float32))
                if value.shape != targets.shape:
                    raise SpecError.at(f"{where}.loss_fn_inputs.{name}", f"{where}: {name} has shape "
                                       f"{list(value.shape)}; target_tokens has {list(targets.shape)}")
                row[name] = value
        return {name: value.to(self.device) for name, value in row.items()}

    def _run_batches(self, rows, loss: losses.Loss, loss_fn: str, config, forward_only: bool):
        outputs, total, first = [], 0.0, 0
        for batch in _batches(rows, self.max_batch_tokens):
            datum_losses, batch_logprobs = [], self._target_logprobs(batch)
            for row, logprobs in zip(batch, batch_logprobs):
                datum_losses.append(loss.compute(logprobs, _loss_inputs(row), config))
                outputs.append({"logprobs": logprobs.detach().float().cpu().numpy()})
            batch_loss = torch.stack(datum_losses).sum()
            if not forward_only:
                batch_loss.backward()  # one batch's activations at a time; the loss is a sum, so its gradients add
            value = float(batch_loss.detach())
            if not math.isfinite(value):
                raise _loss_not_finite(loss_fn, batch, batch_logprobs, datum_losses, first, value)
            total += value
            first += len(batch)
        return outputs, total

    def _check_gradients(self, loss_fn: str, total: float) -> None:
        """This call's gradients (the only ones on the parameters while it runs) are finite, in one device sync."""
        grads = [p.grad for p in self.parameters if p.grad is not None]
        if grads and not bool(torch.stack([g.isfinite().all() for g in grads]).all()):
            raise SpecError.at("data", f"the gradients are not finite although the loss is ({loss_fn}: {total}); "
                                       "the call's gradients were dropped")

    def _target_logprobs(self, batch: list[dict]) -> list[torch.Tensor]:
        """log p(target | prefix) at every position of each row, right-padded into one forward pass."""
        longest = max(len(row["tokens"]) for row in batch)
        ids = torch.zeros(len(batch), longest, dtype=torch.long, device=self.device)
        mask = torch.zeros_like(ids)
        for i, row in enumerate(batch):
            ids[i, :len(row["tokens"])], mask[i, :len(row["tokens"])] = row["tokens"], 1
        logits = self.model(input_ids=ids, attention_mask=mask, use_cache=False).logits.float()
        result = []
        for i, row in enumerate(batch):
            own, targets = logits[i, :len(row["tokens"])], row["target_tokens"]
            picked = own.gather(-1, targets.view(len(targets), -1)) - own.logsumexp(-1, keepdim=True)
            result.append(picked.view(targets.shape))
        return result


def _loss_inputs(row: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {name: value for name, value in row.items() if name not in ("tokens", "target_tokens")}


def _loss_not_finite(loss_fn: str, batch, batch_logprobs, datum_losses, first: int, value: float) -> SpecError:
    """The error of a batch whose loss is NaN or infinite, naming the first datum at fault and, where it can, why."""
    dropped = "the call's gradients were dropped"
    for i, (row, logprobs, datum_loss) in enumerate(zip(batch, batch_logprobs, datum_losses)):
        own = float(datum_loss.detach())
        if math.isfinite(own):
            continue
        where = f"data[{first + i}]"
        bad = [name for name, tensor in _loss_inputs(row).items() if not bool(tensor.isfinite().all())]
        if bad:
            why = f"its loss_fn_inputs {bad} hold NaN or infinite values"
        elif not bool(logprobs.detach().isfinite().all()):
            why = "the model's logprobs of its target tokens are not finite (have the weights diverged?)"
        else:
            why = ("its inputs and logprobs are finite, so a term overflowed (say, the ratio exp(logprobs − sampler "
                   "logprobs) where a sampler logprob lies far below the model's)")
        return SpecError.at(where, f"the loss is not finite: {loss_fn} gives {own} for {where}: {why}; {dropped}")
    last = first + len(batch) - 1
    return SpecError.at("data", f"the loss is not finite: {loss_fn} gives finite losses for data[{first}] to "
                                f"data[{last}] but their sum is {value} (an overflow); {dropped}")


def _adapter_keys(model, parameters: list[torch.Tensor]) -> list[str]:
    """The key each trainable parameter has in a saved adapter file, matched by storage with PEFT's own state dict
    (so PEFT's naming rules are not restated here)."""
    from peft.utils import get_peft_model_state_dict

    by_storage = {tensor.data_ptr(): key for key, tensor in
                  get_peft_model_state_dict(model, save_embedding_layers=False).items()}
    keys = [by_storage.get(p.data_ptr()) for p in parameters]
    if None in keys:
        raise RuntimeError("some trainable parameters are not part of the PEFT adapter's state dict")
    return keys


def _folder_key(path: str) -> str:
    return str(Path(path).resolve())


def _integers(value, where: str) -> torch.Tensor:
    tensor = torch.as_tensor(np.asarray(value))
    if tensor.is_floating_point() or tensor.dtype == torch.bool:
        raise SpecError.at(where, f"{where} must hold integer token ids")
    return tensor.long()


def _batches(rows: list[dict], max_batch_tokens: int):
    """Consecutive rows whose padded size (rows × longest) stays within max_batch_tokens; a longer row goes alone."""
    batch: list[dict] = []
    for row in rows:
        longest = max([len(r["tokens"]) for r in batch] + [len(row["tokens"])])
        if batch and (len(batch) + 1) * longest > max_batch_tokens:
            yield batch
            batch = []
        batch.append(row)
    yield batch


def _read_session_file(path: str) -> dict:
    file = Path(path, SESSION_FILE)
    if not file.is_file():
        raise SpecError.at("path", f"{path} is not a save_state folder (no {SESSION_FILE})")
    return json.loads(file.read_text())
