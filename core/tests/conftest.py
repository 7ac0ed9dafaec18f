"""Shared fixtures: a tiny model built once per session and small datasets."""
from __future__ import annotations

import os

# Tiny models gain nothing from intra-op threads, and on a shared 2-core machine OpenMP spin-waits cost more
# than they give; subprocesses inherit this too.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402
from helpers import QA, TEMPLATES, TOOL_FAMILIES, captured_events, conversation, sft_spec, write_jsonl


@pytest.fixture(autouse=True)
def _device(request, monkeypatch):
    """Tests are about the CPU unless marked `cuda`: on a machine with CUDA they still run on the CPU (the device
    choice, dtype, attention kernel and losses they assert are the CPU's), in this process and in the processes they
    start. A `cuda` test runs only where CUDA is."""
    import torch

    if request.node.get_closest_marker("cuda"):
        if not torch.cuda.is_available():
            pytest.skip("needs a CUDA GPU")
        return
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture(autouse=True)
def _slow_marked_honestly(request, monkeypatch):
    """`pytest -m "not slow"` is the fast tier (README "Contributing"): a test that trains, exports or starts one of the
    core's processes (`python -m ftcore …`: a training, an export, `serve`) must be marked `slow`. One that is not
    fails at the first such call, with what to do, so the tier stays fast as tests are added."""
    if request.node.get_closest_marker("slow"):
        return
    import subprocess

    import gguf
    import torch
    import transformers

    def refuse(what: str):
        def call(*args, **kwargs):
            raise AssertionError(f"this test {what}: mark it @pytest.mark.slow (tests/conftest.py)")
        return call

    popen_init = subprocess.Popen.__init__

    def popen(self, args, *rest, **kwargs):
        if _runs_core(args):
            refuse("starts the core's CLI")()
        popen_init(self, args, *rest, **kwargs)

    monkeypatch.setattr(transformers.Trainer, "train", refuse("trains a model"))
    monkeypatch.setattr(torch.onnx, "export", refuse("exports to ONNX"))
    monkeypatch.setattr(gguf.GGUFWriter, "write_tensors_to_file", refuse("exports a GGUF file"))
    monkeypatch.setattr(subprocess.Popen, "__init__", popen)


def _runs_core(command) -> bool:
    """Whether a Popen command is `python -m ftcore …` (a list, or a string run by a shell)."""
    words = command.split() if isinstance(command, str) else [str(word) for word in command or []]
    return any(word == "-m" and after.split(".")[0] == "ftcore" for word, after in zip(words, words[1:]))


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    from ftcore.models.tiny_model import Options, run

    folder = tmp_path_factory.mktemp("tiny") / "model"
    corpus = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    corpus.write_text("\n".join(q + " " + a for q, a in QA) + " Good bad yes no 0 1 2 3 4 5 6 7 8 9")
    with captured_events():
        run(Options(output_dir=str(folder), text_files=[str(corpus)]))
    return str(folder)


@pytest.fixture(scope="session")
def trained_adapter(tiny_model, tmp_path_factory) -> str:
    """A LoRA adapter that taught the tiny model QA's answers (fp32, so greedy choices are not ties) and its
    end-of-turn token."""
    from ftcore.train.run import run

    folder = tmp_path_factory.mktemp("guards")
    train = write_jsonl(folder / "train.jsonl", [conversation(q, a) for q, a in QA] * 4)
    with captured_events():
        run(sft_spec(tiny_model, train, None, folder / "run", logging_steps=1, max_length=64))
    return str(folder / "run" / "adapter")


@pytest.fixture()
def sft_files(tmp_path) -> tuple[str, str]:
    train = write_jsonl(tmp_path / "train.jsonl", [conversation(q, a) for q, a in QA] * 4)
    test = write_jsonl(tmp_path / "test.jsonl", [conversation(q, a) for q, a in QA])
    return train, test




@pytest.fixture(scope="session")
def tiny_model_of(tmp_path_factory):
    """architecture → the folder of a make-tiny-model model of it (default options), built once per session."""
    from ftcore.models.tiny_model import Options, run

    built: dict[str, str] = {}

    def make(architecture: str) -> str:
        if architecture not in built:
            folder = tmp_path_factory.mktemp(f"tiny-{architecture}") / "model"
            with captured_events():
                run(Options(output_dir=str(folder), architecture=architecture))
            built[architecture] = str(folder)
        return built[architecture]

    return make


@pytest.fixture(scope="session")
def tool_model_of(tmp_path_factory):
    """family (helpers.TOOL_FAMILIES) → a tiny model with that family's published chat template, built once per
    session; its tokenizer also learns the templates' text, so their long tool prompts stay short."""
    from ftcore.models.tiny_model import Options, run

    built: dict[str, str] = {}

    def make(family: str) -> str:
        if family not in built:
            folder = tmp_path_factory.mktemp(f"tools-{family}") / "model"
            with captured_events():
                run(Options(output_dir=str(folder), vocab_size=800, max_position_embeddings=1024,
                            text_files=[str(p) for p in sorted(TEMPLATES.glob("*.jinja"))], **TOOL_FAMILIES[family]))
            built[family] = str(folder)
        return built[family]

    return make
