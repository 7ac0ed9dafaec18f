"""decode: the engine's own decode loop (#64), what generate.compiled_generate runs for the models it compiles.

The model's forward from transformers over a static KV cache and, around it, only what generation needs: the next
token (greedy, or temperature/top-p sampling drawn with per-row seeds), stop tokens and per-row lengths as tensors.
On CUDA the step (forward and choice) is compiled by torch.compile and STEPS_PER_READ steps are captured as one CUDA
graph, so the host launches one graph and reads the finished rows once per STEPS_PER_READ tokens instead of running
transformers' generate loop (logits processors, stopping criteria, cache bookkeeping, a host sync) every token; the
2026-11-27 H200 profile put 8.2 of a step's 8.8 ms there. On the CPU the same step runs eagerly (tests: the tokens
equal transformers' generate's). Stop strings are found by the host at each read and the row is cut at the token
that completed one, as transformers' StopStringCriteria cuts it, so the text does not depend on STEPS_PER_READ.
A model on transformers' sdpa attends through _grouped_sdpa while the loop runs: grouped-query heads read the cache
as it is instead of transformers' copy of it per query head (the 2026-11-30 profile: 58% of a step).
Only what generate would do the same way comes here (plan() says None otherwise): a logits processor other than
temperature and top-p (a repetition penalty in the model's generation config, a constrained-JSON filter, top-k,
min-p), beams or scores asked for stay on transformers' generate.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .. import events

STEPS_PER_READ = 8  # decode steps per CUDA graph replay, between two host reads of the finished rows
_MASK32 = 0xFFFFFFFF


@dataclass(frozen=True)
class Plan:
    """What the loop needs from generate's settings: how to choose a token and when a row ends."""

    temperature: float  # 0: greedy
    top_p: float
    stop_ids: tuple[int, ...]  # generate's eos_token_id(s): the row ends on them, padded from then on
    pad_id: int
    max_new_tokens: int


def plan(model, settings: dict) -> Plan | None:
    """The loop's settings when transformers' generate, given `settings` (its keyword arguments), would choose tokens
    by argmax or by temperature/top-p sampling alone; None when it would apply anything else. The processors are the
    ones generate itself builds (transformers 4.57 GenerationMixin._prepare_generation_config and
    _get_logits_processor, read from its source), so a model's generation_config.json counts as it does there."""
    from transformers import LogitsProcessorList
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopPLogitsWarper

    settings = dict(settings)
    if settings.pop("stopping_criteria", None) or settings.pop("prefix_allowed_tokens_fn", None):
        return None
    settings.pop("stop_strings", None), settings.pop("tokenizer", None)  # found by the host (decode's stop_strings)
    for ignored in ("cache_implementation", "compile_config", "disable_compile"):
        settings.pop(ignored, None)
    config, extra = model._prepare_generation_config(settings.pop("generation_config", None), **settings)
    model._prepare_special_tokens(config, kwargs_has_attention_mask=True, device=next(model.parameters()).device)
    if extra or config.num_beams != 1 or config.output_scores or config.output_logits or config.return_dict_in_generate:
        return None
    processors = model._get_logits_processor(generation_config=config, logits_processor=LogitsProcessorList())
    temperature, top_p = 1.0, 1.0
    for processor in processors:
        if isinstance(processor, TemperatureLogitsWarper):
            temperature = processor.temperature
        elif isinstance(processor, TopPLogitsWarper) and processor.min_tokens_to_keep == 1:
            top_p = processor.top_p
        else:
            return None
    eos = config.eos_token_id
    stops = tuple(eos if isinstance(eos, list) else [] if eos is None else [eos])
    pad = config.pad_token_id if config.pad_token_id is not None else (stops[0] if stops else 0)
    return Plan(temperature if config.do_sample else 0.0, top_p if config.do_sample else 1.0, stops, int(pad),
                int(config.max_new_tokens))


def decode(model, input_ids, attention_mask, plan: Plan, seed: int = 0, stop_strings: list[str] | None = None,
           tokenizer=None, should_stop: Callable[[], bool] | None = None, compiled: bool | None = None,
           every: int | None = None, probabilities: bool = False):
    """The new tokens after each (left-padded) prompt, as transformers' generate returns them: each row up to its stop
    token, stop string or plan.max_new_tokens, padded after; as wide as the longest row. Row k samples with seed
    `seed + k`. `compiled` (None: on CUDA): the step through torch.compile (and, on CUDA, CUDA graphs).
    `every`: steps between two host reads (None: STEPS_PER_READ). `should_stop` is polled at each read; when it
    turns true the rows end where they are. `probabilities`: also the probability each sampled token had after
    temperature and top-p (for tests), as a second tensor."""
    every = every or STEPS_PER_READ
    decoder = _decoder(model, input_ids.shape[0], input_ids.shape[1], plan.max_new_tokens, len(plan.stop_ids), every,
                       input_ids.device.type == "cuda" if compiled is None else compiled)
    # Sampling reads the model without dropout (GRPO samples while its model trains, as a vLLM-served GRPO does), so
    # one compiled graph serves training and inference alike.
    modes = {module: module.training for module in model.modules()}
    model.eval()
    sdpa = _attend_grouped(model)
    try:
        return decoder.run(input_ids, attention_mask, plan, seed, stop_strings, tokenizer, should_stop, probabilities)
    finally:
        for module, training in modes.items():
            module.training = training
        for config in sdpa:
            config._attn_implementation = "sdpa"


GROUPED_SDPA = "ftcore_grouped_sdpa"


def _attend_grouped(model) -> list:
    """The configs of the model's parts that attend with transformers' sdpa, switched to GROUPED_SDPA for the loop
    (the caller switches them back): the same attention, but a decode step's grouped query heads read their shared
    key/value head from the cache as it is. transformers 4.57's sdpa_attention_forward gives scaled_dot_product_attention
    `enable_gqa` only without a mask, and the loop's rows are left-padded, so it copied every layer's keys and values
    to all query heads (repeat_kv) at every token: on the 2026-11-30 H200 profile of the 1B shape (32 query heads on 8
    key/value heads, 64 rows, 328 positions) that copy was 0.93 ms and the attention reading the copy 0.98 ms of a
    3.33 ms step, where reading the weights once takes 0.58."""
    from transformers import AttentionInterface, PreTrainedModel
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    if GROUPED_SDPA not in AttentionInterface._global_mapping:
        AttentionInterface.register(GROUPED_SDPA, _grouped_sdpa)
        AttentionMaskInterface.register(GROUPED_SDPA, sdpa_mask)  # the masks sdpa gets, as sdpa gets them
    configs = {id(m.config): m.config for m in model.modules()
               if isinstance(m, PreTrainedModel) and m.config._attn_implementation == "sdpa"}
    for config in configs.values():
        config._attn_implementation = GROUPED_SDPA
    return list(configs.values())


def _grouped_sdpa(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, is_causal=None,
                  **kwargs):
    """transformers' sdpa attention, the same numbers: for one query position (a decode step) each key/value head's
    group of query heads goes to scaled_dot_product_attention as that many query positions of the one head, under the
    row's mask (the same for all of them), so the cache is read as it is instead of copied per query head. Anything
    else (a prefill, no groups, a per-head mask, attention weights asked for) is transformers' own function."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    batch, heads, positions, dim = query.shape
    kv_heads = key.shape[1]
    if (positions != 1 or kv_heads == heads or kwargs.get("output_attentions") or kwargs.get("head_mask") is not None
            or (attention_mask is not None and (attention_mask.ndim != 4 or attention_mask.shape[1] != 1))):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    mask = None if attention_mask is None else attention_mask[:, :, :, :key.shape[-2]]
    grouped = query.reshape(batch, kv_heads, heads // kv_heads, dim)  # head h reads key/value head h // group size
    out = torch.nn.functional.scaled_dot_product_attention(grouped, key, value, attn_mask=mask, dropout_p=dropout,
                                                           scale=scaling, is_causal=False)
    return out.reshape(batch, heads, 1, dim).transpose(1, 2).contiguous(), None


class Decoder:
    """One shape's static cache, its state tensors and, on CUDA, the captured graph of `every` steps: kept on the
    model per shape (the graph holds their addresses; transformers' static cache is marked static, so a new one would
    recompile the step)."""

    def __init__(self, model, rows: int, width: int, new_tokens: int, stop_count: int, every: int, compiled: bool):
        import torch
        from transformers import StaticCache

        self.model, self.every, self.width = model, every, width
        device = next(model.parameters()).device
        length = width + new_tokens + every  # a replay may run up to every - 1 steps past the last token
        self.cache = StaticCache(config=model.config, max_cache_len=length)
        long = dict(dtype=torch.long, device=device)
        self.token = torch.zeros(rows, **long)
        self.position = torch.zeros(rows, **long)
        self.cache_position = torch.zeros(1, **long)
        self.index = torch.zeros(1, **long)  # the column of `out` the next step writes
        self.last = torch.zeros(1, **long)  # the last column a row may write (max_new_tokens - 1)
        self.finished = torch.zeros(rows, dtype=torch.bool, device=device)
        self.out = torch.zeros(rows, new_tokens + every, **long)
        self.chosen = torch.zeros(rows, new_tokens + every, dtype=torch.float32, device=device)
        self.mask = torch.zeros(rows, length, **long)
        self.seeds = torch.zeros(rows, **long)
        self.temperature = torch.ones(rows, 1, dtype=torch.float32, device=device)
        self.top_p = torch.ones(rows, 1, dtype=torch.float32, device=device)
        self.stops = torch.zeros(stop_count, **long)
        self.pad = torch.zeros(1, **long)
        self.compiled, self.graphs, self.tried = compiled, {}, set()
        self.cut: dict[int, int] = {}

    def run(self, input_ids, attention_mask, plan: Plan, seed: int, stop_strings, tokenizer, should_stop,
            probabilities: bool):
        import torch

        with torch.no_grad():
            self.start(input_ids, attention_mask, plan, seed)
            done = 1
            while done < plan.max_new_tokens:
                self.advance()
                done += self.every
                finished = self.finished.cpu()  # the one host read per `every` steps
                if stop_strings:
                    finished |= self.cut_at_stop_strings(tokenizer, stop_strings, min(done, plan.max_new_tokens))
                if bool(finished.all()) or (should_stop is not None and should_stop()):
                    break
            return self.result(min(done, plan.max_new_tokens), plan, probabilities)

    def start(self, input_ids, attention_mask, plan: Plan, seed: int) -> None:
        """The prefill (eager, as transformers' generate does it) and the first token."""
        import torch

        self.cache.reset()
        self.variant = ("greedy",) if plan.temperature == 0 else ("sample", plan.top_p < 1)
        device = self.token.device
        self.mask.fill_(1)
        self.mask[:, :self.width].copy_(attention_mask)  # positions past the prompt: the causal mask hides the future
        positions = attention_mask.long().cumsum(-1) - 1
        positions.masked_fill_(attention_mask == 0, 1)  # transformers' prepare_inputs_for_generation
        self.seeds.copy_(torch.arange(seed, seed + self.seeds.shape[0], device=device))
        self.temperature.fill_(plan.temperature or 1.0)
        self.top_p.fill_(plan.top_p)
        # Filled in place, as every state tensor is: a captured graph reads the addresses it was captured with.
        self.stops.copy_(torch.tensor(plan.stop_ids, dtype=torch.long))
        self.pad.fill_(plan.pad_id)
        self.last.fill_(plan.max_new_tokens - 1)
        self.finished.zero_()
        self.index.zero_()
        self.cut = {}
        logits = self.model(input_ids=input_ids, attention_mask=self.mask, position_ids=positions,
                            past_key_values=self.cache, cache_position=torch.arange(self.width, device=device),
                            use_cache=True, logits_to_keep=1).logits[:, -1]
        token, chosen = _choose(self.variant, logits, self.seeds, self.index, self.temperature, self.top_p)
        self._record(token, chosen)
        self.position.copy_(positions[:, -1] + 1)
        self.cache_position.fill_(self.width)

    def advance(self) -> None:
        """`every` decode steps: one graph replay on CUDA once captured, else the steps one by one (on CUDA the first
        time on a side stream, as CUDA graph capture wants its kernels' first launches behind it, then captured)."""
        import torch

        if graph := self.graphs.get(self.variant):
            graph.replay()
            return
        step = _compiled_step(self.variant) if self.compiled else _step
        if not (self.compiled and self.token.device.type == "cuda" and self.variant not in self.tried):
            for _ in range(self.every):
                step(self.model, self.cache, self.variant, *self._state())
            return
        self.tried.add(self.variant)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(self.every):
                step(self.model, self.cache, self.variant, *self._state())
        torch.cuda.current_stream().wait_stream(side)
        self._capture(step)

    def cut_at_stop_strings(self, tokenizer, stop_strings: list[str], done: int):
        """Rows whose text holds a stop string now: cut after the token that completed it (the first such token, as
        transformers' StopStringCriteria stops there), finished on the device too; a bool tensor of them."""
        import torch

        stops = set(self.stops.tolist())
        rows = [row[:next((t + 1 for t, token in enumerate(row) if token in stops), len(row))]
                for row in self.out[:, :done].tolist()]  # a stop token ended the row before any string could
        found = torch.zeros(len(rows), dtype=torch.bool)
        for k, row in enumerate(rows):
            if k in self.cut:
                found[k] = True
                continue
            if not any(s in tokenizer.decode(row, skip_special_tokens=True) for s in stop_strings):
                continue
            end = next(t for t in range(1, len(row) + 1)
                       if any(s in tokenizer.decode(row[:t], skip_special_tokens=True) for s in stop_strings))
            self.cut[k] = end
            found[k] = True
        if self.cut:
            self.finished[list(self.cut)] = True
        return found

    def result(self, done: int, plan: Plan, probabilities: bool):
        """The rows as generate returns them: a row's tokens after its stop token or stop string are padding, and the
        tensor ends with the longest row."""
        out, chosen = self.out[:, :done].clone(), self.chosen[:, :done].clone()
        ends = []
        stops = set(plan.stop_ids)
        for k, row in enumerate(out.tolist()):
            end = self.cut.get(k) or next((t + 1 for t, token in enumerate(row) if token in stops), len(row))
            out[k, end:] = plan.pad_id
            ends.append(end)
        width = max(ends, default=0)
        out, chosen = out[:, :width], chosen[:, :width]
        return (out, chosen) if probabilities else out

    def _state(self) -> tuple:
        return (self.token, self.position, self.cache_position, self.index, self.last, self.finished, self.out,
                self.chosen, self.mask, self.seeds, self.temperature, self.top_p, self.stops, self.pad)

    def _record(self, token, chosen) -> None:
        _write(token, chosen, self.index, self.last, self.finished, self.out, self.chosen, self.stops, self.pad)
        self.token.copy_(token)

    def _capture(self, step) -> None:
        import torch

        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(self.every):
                    step(self.model, self.cache, self.variant, *self._state())
            self.graphs[self.variant] = graph
        except Exception as e:  # noqa: BLE001 - the graph is an optimisation: the compiled steps still decode
            events.emit(events.Log(level="warning", message=f"generation: capturing {self.every} decode steps as a "
                                   f"CUDA graph failed ({type(e).__name__}: {e}); the steps run one by one"))


def _decoder(model, rows: int, width: int, new_tokens: int, stop_count: int, every: int, compiled: bool) -> Decoder:
    decoders = model.__dict__.setdefault("_ftcore_decoders", {})
    key = (rows, width, new_tokens, stop_count, every, compiled)
    if key not in decoders:
        decoders[key] = Decoder(model, rows, width, new_tokens, stop_count, every, compiled)
    return decoders[key]


def _step(model, cache, variant, token, position, cache_position, index, last, finished, out, chosen_out, mask,
          seeds, temperature, top_p, stops, pad) -> None:
    """One decode step, in place on the state tensors: the forward of the last tokens, the next token, the row's end."""
    logits = model(input_ids=token[:, None], attention_mask=mask, position_ids=position[:, None],
                   past_key_values=cache, cache_position=cache_position, use_cache=True).logits[:, -1]
    index.add_(1)
    token_next, chosen = _choose(variant, logits, seeds, index, temperature, top_p)
    _write(token_next, chosen, index, last, finished, out, chosen_out, stops, pad)
    token.copy_(token_next)
    position.add_(1)
    cache_position.add_(1)


def _write(token, chosen, index, last, finished, out, chosen_out, stops, pad) -> None:
    """The token into column `index` (padding once the row has finished), and whether the row finishes with it."""
    import torch

    token = torch.where(finished, pad, token)
    out.index_copy_(1, index, token[:, None])
    chosen_out.index_copy_(1, index, chosen[:, None])
    ended = (token[:, None] == stops[None, :]).any(dim=1) | (index >= last)
    finished.logical_or_(ended)


def _choose(variant, logits, seeds, index, temperature, top_p):
    """(the next token of each row, the probability it had): argmax, or a draw from the softmax of logits/temperature
    with top-p's tail removed exactly as transformers' TemperatureLogitsWarper and TopPLogitsWarper remove it, by the
    inverse of its cumulative distribution at a uniform number hashed from the row's seed and the step."""
    import torch

    scores = logits.float()
    if variant[0] == "greedy":
        return scores.argmax(dim=-1), torch.ones_like(scores[:, 0])
    scores = scores / temperature
    if variant[1]:  # top-p < 1
        ordered, order = torch.sort(scores, descending=False)
        cumulative = _cumsum(ordered.softmax(dim=-1))
        drop = cumulative <= (1 - top_p)
        drop[..., -1:] = False
        scores = scores.masked_fill(drop.scatter(1, order, drop), -float("inf"))
    probs = scores.softmax(dim=-1)
    cdf = _cumsum(probs)
    u = _uniform(seeds, index)[:, None] * cdf[:, -1:]
    token = torch.searchsorted(cdf, u).clamp_(max=probs.shape[-1] - 1)[:, 0]
    return token, probs.gather(1, token[:, None])[:, 0]


def _uniform(seeds, index):
    """A number in (0, 1) per row from (seed, step), the same on every device: a 32-bit integer hash (multipliers
    under 2**31, so no product leaves int64), its top 24 bits."""
    x = (seeds * 0x2C1B3C6D + index * 0x297A2D39 + 0x68E31DA4) & _MASK32
    for multiplier in (0x7FEB352D, 0x3C6EF372):
        x = ((x ^ (x >> 16)) * multiplier) & _MASK32
    x = x ^ (x >> 15)
    return ((x >> 8).float() + 0.5) / float(1 << 24)


def _cumsum(x):
    """x.cumsum(-1) as an operator torch.compile does not look into (ftcore::cumsum, registered by _compiled_step):
    Inductor of torch 2.11 fails to generate its split scan of a row as long as a 128,256-token vocabulary ("Error in
    codegen for ComputedBuffer … SplitScan", then "InductorError: TypeError: list indices must be integers or slices,
    not NoneType"; the 2026-11-30 H200 check, GRPO's sampling step), and the model then fell back to plain generate.
    The operator runs ATen's cumsum kernel, inside the compiled step and its CUDA graph alike."""
    return _CUMSUM[0](x) if _CUMSUM else x.cumsum(dim=-1)


_CUMSUM: list = []
_COMPILED: dict = {}


def _register_cumsum() -> None:
    import torch

    if _CUMSUM:
        return

    @torch.library.custom_op("ftcore::cumsum", mutates_args=(), schema="(Tensor x) -> Tensor")  # the module's
    def cumsum(x):  # annotations are strings (__future__), which custom_op cannot read
        return x.cumsum(dim=-1)

    @cumsum.register_fake
    def _(x):
        return torch.empty_like(x)

    _CUMSUM.append(cumsum)


def _compiled_step(variant):
    import torch

    if variant not in _COMPILED:
        _register_cumsum()
        # One code object serves every variant and shape, and dynamo stops compiling a code object after its
        # recompile limit (8): generate.MAX_COMPILED_SHAPES shapes × 3 variants need more.
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 32)
        _COMPILED[variant] = torch.compile(_step, fullgraph=True, dynamic=False)
    return _COMPILED[variant]
