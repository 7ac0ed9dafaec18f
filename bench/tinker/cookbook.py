"""The tinker-cookbook's own loops, unchanged, against our Tinker API (#62). Only configuration is ours:

- the tokenizer is registered under the base model's name from the model store's folder (the cookbook would fetch it
  from the hub with AutoTokenizer.from_pretrained(model_name));
- the renderer is the cookbook's `qwen3_instruct` for ChatML models with no default system message (the tests' tiny
  model), or `qwen2_5`, registered here: the same with Qwen2.5's default system message, as the template the
  README's default model (SmolLM2-135M, imported with Qwen2.5's template) is served with writes it. `render` shows
  either's tokens against the served template's.

Commands (the API key from TINKER_API_KEY, as the SDK reads it; the cookbook writes LOG_PATH/metrics.jsonl):
  sl      tinker_cookbook.supervised.train.main over the cookbook's example_data/conversations.jsonl
          (FromConversationFileBuilder, 16 conversations held out and evaluated every --eval-every steps)
  rl      tinker_cookbook.rl.train.main with a small environment of the cookbook's ProblemEnv: asked to say a word, a
          reply earns 1 when its first letter is a vowel (a, e, i, o, u or y); the tests' tiny model (random weights)
          starts its replies so ~24% of the time (400 replies, temperature 1)
  render  the cookbook's example conversations rendered both ways (JSON on stdout)

    bash scripts/start.sh     # the stack, with the default model; then, with the core's interpreter (its dev group
                              # holds the cookbook):
    TINKER_API_KEY=tml-… core/.venv/bin/python bench/tinker/cookbook.py sl --base-url http://127.0.0.1:8005 \\
        --model smollm2-135m --tokenizer-dir data/models/smollm2-135m --renderer qwen2_5 --log-path /tmp/cookbook-sl
"""
from __future__ import annotations

import argparse
import asyncio
import importlib.resources
import json
from collections.abc import Sequence
from functools import partial

import chz
from tinker_cookbook import renderers
from tinker_cookbook.renderers.qwen3 import Qwen3InstructRenderer
from tinker_cookbook.rl.problem_env import ProblemEnv, ProblemGroupBuilder
from tinker_cookbook.rl.types import EnvGroupBuilder, RLDataset, RLDatasetBuilder
from tinker_cookbook.tokenizer_utils import get_tokenizer, register_tokenizer

CONVERSATIONS = importlib.resources.files("tinker_cookbook") / "example_data" / "conversations.jsonl"


class Qwen25Renderer(Qwen3InstructRenderer):
    """Qwen2.5's chat format: Qwen3 instruct's turns, and its default system message when a conversation has none."""

    DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

    def _with_system(self, messages):
        if messages and messages[0]["role"] == "system":
            return messages
        return [{"role": "system", "content": self.DEFAULT_SYSTEM}, *messages]

    def build_generation_prompt(self, messages, role="assistant", prefill=None):
        return super().build_generation_prompt(self._with_system(messages), role=role, prefill=prefill)

    def build_supervised_example(self, messages, train_on_what=renderers.TrainOnWhat.LAST_ASSISTANT_MESSAGE):
        return super().build_supervised_example(self._with_system(messages), train_on_what=train_on_what)

    def build_supervised_examples(self, messages, train_on_what=renderers.TrainOnWhat.LAST_ASSISTANT_TURN):
        return super().build_supervised_examples(self._with_system(messages), train_on_what=train_on_what)


def configure(model: str, tokenizer_dir: str) -> None:
    from transformers import AutoTokenizer

    register_tokenizer(model, lambda: AutoTokenizer.from_pretrained(tokenizer_dir))
    renderers.register_renderer("qwen2_5", lambda tokenizer, image_processor=None: Qwen25Renderer(tokenizer))


def supervised(args) -> None:
    from tinker_cookbook.supervised import train
    from tinker_cookbook.supervised.data import FromConversationFileBuilder
    from tinker_cookbook.supervised.types import ChatDatasetBuilderCommonConfig

    dataset = FromConversationFileBuilder(
        file_path=str(CONVERSATIONS), test_size=16,
        common_config=ChatDatasetBuilderCommonConfig(model_name_for_tokenizer=args.model, renderer_name=args.renderer,
                                                     max_length=512, batch_size=args.batch_size),
    )
    asyncio.run(train.main(train.Config(
        log_path=args.log_path, model_name=args.model, recipe_name="ftp_cookbook_sl", renderer_name=args.renderer,
        dataset_builder=dataset, learning_rate=args.learning_rate, lr_schedule="constant", num_epochs=args.epochs,
        lora_rank=args.rank, base_url=args.base_url, eval_every=args.eval_every, save_every=0,
    )))


VOWELS = "aeiouy"


class VowelEnv(ProblemEnv):
    def __init__(self, renderer: renderers.Renderer):
        super().__init__(renderer, format_coef=0.0)

    def get_question(self) -> str:
        return "Say a word."

    def check_answer(self, sample_str: str) -> bool:
        text = sample_str.strip()
        return bool(text) and text[0].lower() in VOWELS

    def check_format(self, sample_str: str) -> bool:
        return True

    def get_reference_answer(self) -> str:
        return f"a word starting with one of {VOWELS}"


class VowelDataset(RLDataset):
    def __init__(self, renderer: renderers.Renderer, steps: int, groups: int, group_size: int):
        self.renderer, self.steps, self.groups, self.group_size = renderer, steps, groups, group_size

    def get_batch(self, index: int) -> Sequence[EnvGroupBuilder]:
        return [ProblemGroupBuilder(env_thunk=partial(VowelEnv, self.renderer), num_envs=self.group_size,
                                    dataset_name="vowel") for _ in range(self.groups)]

    def __len__(self) -> int:
        return self.steps


@chz.chz
class VowelDatasetBuilder(RLDatasetBuilder):
    model: str
    renderer: str
    steps: int
    groups: int
    group_size: int

    async def __call__(self) -> tuple[RLDataset, RLDataset | None]:
        renderer = renderers.get_renderer(self.renderer, get_tokenizer(self.model))
        return VowelDataset(renderer, self.steps, self.groups, self.group_size), None


def reinforcement(args) -> None:
    from tinker_cookbook.rl import train

    builder = VowelDatasetBuilder(model=args.model, renderer=args.renderer, steps=args.steps, groups=args.groups,
                                  group_size=args.group_size)
    asyncio.run(train.main(train.Config(
        log_path=args.log_path, model_name=args.model, recipe_name="ftp_cookbook_rl", renderer_name=args.renderer,
        dataset_builder=builder, learning_rate=args.learning_rate, max_tokens=4, lora_rank=args.rank,
        base_url=args.base_url, eval_every=0, save_every=0,
    )))


def render(args) -> None:
    tokenizer = get_tokenizer(args.model)
    renderer = renderers.get_renderer(args.renderer, tokenizer)
    conversations = [json.loads(line)["messages"] for line in CONVERSATIONS.read_text().splitlines()[:args.count]]

    def template(messages, generation_prompt):
        return list(tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=generation_prompt))

    out = []
    for messages in conversations:
        turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        example, weights = renderer.build_supervised_example(messages)
        out.append({
            "template": template(messages, False),
            "renderer": example.to_ints(),
            "weighted": [t for t, w in zip(example.to_ints(), weights.tolist()) if w > 0],
            "last_reply": tokenizer.encode(messages[turns[-1]]["content"], add_special_tokens=False),
            "prompts": [{"template": template(messages[:i], True),
                         "renderer": renderer.build_generation_prompt(messages[:i]).to_ints()} for i in turns],
        })
    print(json.dumps({"newline": tokenizer.encode("\n", add_special_tokens=False),
                      "end_of_turn": tokenizer.convert_tokens_to_ids("<|im_end|>"), "conversations": out}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("sl", "rl", "render"):
        command = commands.add_parser(name)
        command.add_argument("--model", required=True, help="the base model's name on the Tinker API")
        command.add_argument("--tokenizer-dir", required=True, help="the model store's folder of that model")
        command.add_argument("--renderer", default="qwen3_instruct")
        if name == "render":
            command.add_argument("--count", type=int, default=16)
            continue
        command.add_argument("--base-url", required=True)
        command.add_argument("--log-path", required=True)
        command.add_argument("--learning-rate", type=float, required=True)
        command.add_argument("--rank", type=int, default=8)
        if name == "sl":
            command.add_argument("--epochs", type=int, default=1)
            command.add_argument("--batch-size", type=int, default=16)
            command.add_argument("--eval-every", type=int, default=2)
        else:
            command.add_argument("--steps", type=int, default=12)
            command.add_argument("--groups", type=int, default=4)
            command.add_argument("--group-size", type=int, default=8)
    args = parser.parse_args()
    configure(args.model, args.tokenizer_dir)
    {"sl": supervised, "rl": reinforcement, "render": render}[args.command](args)


if __name__ == "__main__":
    main()
