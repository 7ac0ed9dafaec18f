"""Whether GRPO can learn from its rewards: it learns from the differences between the rewards of one prompt's
answers (each answer's advantage is its reward less its group's mean), so when every answer to a prompt scores the
same, for every prompt, every advantage is 0 and a run pays for its steps and learns nothing (#39: an all-or-nothing
string_check that the base model never passed ran 18 steps at reward 0, silently). Said twice, with the fixes: by the
dry run, from a few answers of the base model scored with the job's graders (`sampled_reward_warning`), and by the
run itself when its first `equal_reward_steps` steps saw nothing but equal rewards (`EqualRewardWatch`)."""
from __future__ import annotations

from transformers import TrainerCallback

from .. import events
from .spec import Options, completion_budget

# The dry run samples PROBE_PROMPTS × PROBE_GENERATIONS answers of PROBE_NEW_TOKENS at most: one batch of 8 rows.
# Measured on a 2-core CPU busy with other work (load 5.6): SmolLM2-135M 16 s for 8 × 64 tokens, 12 s for 8 × 48 (a
# few seconds on an idle one, a fraction of a second on a GPU); the tiny model of the tests well under a second.
PROBE_PROMPTS = 2  # train prompts the dry run samples answers for
PROBE_GENERATIONS = 4  # answers per prompt at most (num_generations when lower)
PROBE_NEW_TOKENS = 48  # tokens per answer at most (max_completion_length when lower)
TRL_TEMPERATURE = 1.0  # GRPOConfig's default, when the spec sets none
EQUAL = 1e-6


def equal_rewards_message(spec: Options, seen: str, rewards: set[float]) -> str:
    """`seen`: what scored the same (the steps, or the sampled answers); `rewards`: the rewards the groups had."""
    hp = spec.hyperparameters
    shown = ", ".join(f"{r:g}" for r in sorted(rewards)[:5]) + (", …" if len(rewards) > 5 else "")
    temperature = hp.temperature if hp.temperature is not None else TRL_TEMPERATURE
    return (f"{seen}, so GRPO sees no difference between the answers it compares (every advantage is 0) and "
            f"learns nothing (reward{'s' if len(rewards) > 1 else ''} {shown}): use a grader that gives partial credit "
            "(text_similarity such as fuzzy_match, string_check like/ilike rather than eq, a multi grader adding a "
            f"format reward), raise num_generations (now {hp.num_generations}) or temperature (now {temperature:g}) "
            "so that some answers differ, or train with SFT first so that some answers pass")


def equal_groups(rewards, generations: int) -> set[float] | None:
    """The rewards (one per answer, a prompt's answers side by side) as groups of `generations`: each group's one
    reward when every group's answers scored the same, else None."""
    groups = [rewards[i:i + generations] for i in range(0, len(rewards), generations)]
    if any(max(g) - min(g) > EQUAL for g in groups):
        return None
    return {round(g[0], 6) for g in groups}


# --- the dry run: a few answers of the base model, scored ---------------------------------------------------------

def sampled_reward_warning(spec: Options, train_records, model, tokenizer) -> dict | None:
    """GRPO only: samples PROBE_GENERATIONS answers (num_generations when fewer) to each of the first PROBE_PROMPTS
    train prompts from `model` as training will (its temperature, max_completion_length up to PROBE_NEW_TOKENS),
    scores them with the job's rewards weighted as training weighs them, and warns when each prompt's answers all
    scored the same. Not made (None) where the sampling or the scores would not be training's: a judge grader (an
    outside model, paid per call), a response_schema (training constrains its answers), vision prompts."""
    import torch

    from ..inference.generate import generate_answers
    from .rewards import build_reward_function

    hp = spec.hyperparameters
    if (spec.trainer_type != "grpo" or spec.response_schema or spec.modality != "text" or not spec.reward_config
            or any(r.type in ("score_model", "label_model") for r in _all_rewards(spec.reward_config))):
        return None
    records = train_records[:PROBE_PROMPTS]
    generations = min(hp.num_generations, PROBE_GENERATIONS)
    prompts = [r["prompt"] for r in records for _ in range(generations)]
    torch.manual_seed(hp.seed)
    temperature = hp.temperature if hp.temperature is not None else TRL_TEMPERATURE
    with events.muted():  # a grader's complaints about these answers are not the job's
        answers = generate_answers(model, tokenizer, prompts, min(completion_budget(hp), PROBE_NEW_TOKENS),
                                   temperature=temperature)
        columns = {k: [r.get(k) for r in records for _ in range(generations)]
                   for k in records[0] if k != "prompt"}
        texts = [a.text for a in answers]
        rewards = [0.0] * len(texts)
        for item in spec.reward_config:
            scored = build_reward_function(item)(prompts=prompts, completions=texts, **columns)
            rewards = [total + item.weight * (s or 0.0) for total, s in zip(rewards, scored)]
    equal = equal_groups(rewards, generations)
    if equal is None:
        return None
    seen = (f"the {generations} answers {spec.base_model} sampled to each of the first {len(records)} train prompts "
            "all got the same reward as the other answers to that prompt")
    return {"code": "equal_rewards", "message": equal_rewards_message(spec, seen, equal)}


def _all_rewards(items):
    for item in items:
        yield item
        yield from _all_rewards((item.graders or {}).values())


# --- the run: its first steps -------------------------------------------------------------------------------------

class EqualRewardWatch(TrainerCallback):
    """Told the rewards of each batch of answers training scores (`record`); at the end of the run's
    `equal_reward_steps`-th step (or its last, when it has fewer), a warning if every group of every step so far
    scored the same. Then it is quiet: one warning a run, and none once a group's answers differed."""

    def __init__(self, spec: Options):
        self.spec = spec
        self.steps = spec.hyperparameters.equal_reward_steps
        self.generations = spec.hyperparameters.num_generations
        self.start = self.seen = 0
        self.rewards: set[float] = set()
        self.settled = self.steps <= 0

    def record(self, rewards: list[float]) -> None:
        if self.settled:
            return
        equal = equal_groups(rewards, self.generations)
        if equal is None:
            self.settled = True
        else:
            self.rewards |= equal

    def on_train_begin(self, args, state, control, **kwargs):
        self.start, self.seen, self.rewards, self.settled = state.global_step, 0, set(), self.steps <= 0

    def on_step_end(self, args, state, control, **kwargs):
        if self.settled:
            return
        self.seen += 1
        if self.seen >= min(self.steps, state.max_steps - self.start) and self.rewards:
            self.settled = True
            steps = f"the first {self.seen} step{'s' if self.seen > 1 else ''}"
            seen = (f"in {steps} of training, the {self.generations} answers to each prompt all got the same reward "
                    "as the other answers to that prompt")
            events.emit(events.Log(level="warning", message=equal_rewards_message(self.spec, seen, self.rewards)))
