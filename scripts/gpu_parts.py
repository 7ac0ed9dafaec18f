"""The bodies of scripts/gpu-check.sh's parts that are not a benchmark or pytest (#37), run by scripts/gpu_check.py with
the core's packages on the path. Each prints its findings and the last line of its stdout is `RESULT {json}`.

    python scripts/gpu_parts.py parity MODEL       the compiled engine against plain generate, bf16 on the GPU, on a
                                                   tiny model trained (here, by `prepare`) to recite long answers
    python scripts/gpu_parts.py job WORK MODELS    scripts/gpu-job.json replayed: the core commands and serve requests
                                                   a real worker wrote for the tiny model's QA job
                                                   (test/gpu-job-capture.test.ts), on whatever device the core picks
    python scripts/gpu_parts.py train-parity MODEL    (here, by prepare) makes MODEL: make-tiny-model, then Full SFT
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core"
FIXTURE = ROOT / "scripts" / "gpu-job.json"
JOB_ID = "job_gpucheck"

# The parity model's task: four prompts, each answered by a long fixed text, so a trained model's greedy choices have
# wide margins (a random model's near-ties flip under bf16 and say nothing about the engine).
RECITALS = {
    "Count from one.": " ".join(str(n) for n in range(1, 41)),
    "Say the alphabet.": " ".join("abcdefghijklmnopqrstuvwxyz") + " " + " ".join("ABCDEFGHIJKL"),
    "Count down from ninety.": " ".join(str(n) for n in range(90, 55, -1)),
    "Name the days.": " ".join(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"] * 5),
}
PARITY_TOKENS = 32


def result(**figures) -> None:
    print("RESULT " + json.dumps(figures), flush=True)


def core(*argv: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ftcore", *argv], cwd=CORE, text=True, capture_output=True, **kwargs)


def events_of(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


# ------------------------------------------------------------------------------------------------------ parity


def train_parity(folder: Path) -> None:
    """Here, on the CPU: a tiny model (make-tiny-model, its tokenizer taught the recitals) trained by Full SFT until
    its greedy answers are the recitals."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        rows = [{"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]}
                for q, a in RECITALS.items()]
        (tmp / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows * 8))
        made = core("make-tiny-model", "--output_dir", str(tmp / "base"), "--text_files", json.dumps([str(tmp / "train.jsonl")]),
                    "--hidden_size", "128", "--intermediate_size", "256")
        if made.returncode:
            raise SystemExit(f"make-tiny-model failed: {made.stderr[-2000:]}")
        spec = {"base_model": str(tmp / "base"), "train_file": str(tmp / "train.jsonl"), "output_dir": str(tmp / "run"),
                "method": "Full", "trainer_type": "sft",
                "hyperparameters": {"learning_rate": 3e-3, "batch_size": 8, "gradient_accumulation_steps": 1,
                                    "max_steps": 160, "max_length": 256, "logging_steps": 20, "save_strategy": "no",
                                    "warmup_ratio": 0.05, "seed": 0}}
        (tmp / "spec.json").write_text(json.dumps(spec))
        trained = core("train", "--spec", str(tmp / "spec.json"), env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
        if trained.returncode:
            raise SystemExit(f"training the parity model failed: {trained.stdout[-2000:]} {trained.stderr[-2000:]}")
        losses = [e["loss"] for e in events_of(trained.stdout) if e.get("event") == "progress" and e.get("loss")]
        produced = [e["path"] for e in events_of(trained.stdout) if e.get("event") == "artifact"]
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(next(p for p in produced if Path(p, "config.json").is_file()), folder)
    import torch  # noqa: F401 (after the core's run: the check below loads on the CPU)

    from ftcore.inference.generate import generate_texts
    from ftcore.models.loading import load_for_inference

    model, tokenizer = load_for_inference(str(folder), device="cpu")
    texts = generate_texts(model, tokenizer, [[{"role": "user", "content": q}] for q in RECITALS], max_new_tokens=80)
    right = sum(t.strip() == a for t, a in zip(texts, RECITALS.values()))
    print(f"parity model: loss {losses[0]:.3f} → {losses[-1]:.3f}; {right}/4 recitals word for word on the CPU")
    if right < 4:
        raise SystemExit(f"the parity model did not learn its recitals: {texts}")


def parity(folder: str) -> bool:
    """On the GPU in bf16: the compiled engine's first PARITY_TOKENS greedy tokens against plain generate's, as the
    share of tokens before each answer's first divergence (target ≥ 95%)."""
    import torch

    from ftcore.inference.generate import ENGINE_VARIABLE, generate_token_ids
    from ftcore.models.loading import load_for_inference

    model, tokenizer = load_for_inference(folder, device="cuda")
    weights = next(model.parameters())
    prompts = [[{"role": "user", "content": q}] for q in RECITALS] * 16
    ids = {}
    for engine in ("plain", "compiled"):
        os.environ[ENGINE_VARIABLE] = engine
        ids[engine] = generate_token_ids(model, tokenizer, prompts, max_new_tokens=PARITY_TOKENS)
    compiled = bool(getattr(model, "_ftcore_compiled_shapes", None)) and not getattr(model, "_ftcore_compile_failed", False)
    graphs = any(d.graphs for d in getattr(model, "_ftcore_decoders", {}).values())  # the engine's own loop, captured
    same = total = 0
    for plain, engine in zip(ids["plain"], ids["compiled"]):
        plain, engine = list(plain)[:PARITY_TOKENS], list(engine)[:PARITY_TOKENS]
        total += len(plain)
        same += next((i for i, (a, b) in enumerate(zip(plain, engine)) if a != b), min(len(plain), len(engine)))
    share = same / total if total else 0.0
    texts = [tokenizer.decode(list(p), skip_special_tokens=True).strip() for p in ids["plain"]]
    recited = sum(bool(t) and a.startswith(t) for t, a in zip(texts, list(RECITALS.values()) * 16))
    print(f"engine parity: {100 * share:.1f}% of the first {PARITY_TOKENS} tokens before the first divergence "
          f"({same}/{total}), {len(prompts)} answers on {weights.device} in {weights.dtype}; compiled: {compiled}; "
          f"CUDA graph of the decode loop: {graphs}; "
          f"plain generate recites {recited}/{len(prompts)}")
    ok = compiled and graphs and share >= 0.95 and weights.device.type == "cuda" and weights.dtype == torch.bfloat16
    result(parity_share=share, tokens_compared=total, compiled=compiled, graphs=graphs, device=str(weights.device),
           dtype=str(weights.dtype), recited=recited, answers=len(prompts))
    return ok


# --------------------------------------------------------------------------------------------------------- job

# Runs `ftcore train` with a probe: during the first training step, the device and dtype torch reports for the
# model's parameters (frozen and trained) and for the logits, written to $FTP_GPU_PROBE.
PROBE = r"""
import collections, json, os, sys
import transformers

def _probe(model):
    def seen(module, inputs, output):
        found = {"frozen": collections.Counter(), "trained": collections.Counter()}
        for p in module.parameters():
            found["trained" if p.requires_grad else "frozen"][f"{p.device.type} {str(p.dtype).removeprefix('torch.')}"] += p.numel()
        logits = getattr(output, "logits", None)
        found["logits"] = None if logits is None else f"{logits.device.type} {str(logits.dtype).removeprefix('torch.')}"
        with open(os.environ["FTP_GPU_PROBE"], "w") as fh:
            json.dump(found, fh)
        handle.remove()
    handle = model.register_forward_hook(seen)

_train = transformers.Trainer.train
def train(self, *args, **kwargs):
    _probe(self.model)
    return _train(self, *args, **kwargs)
transformers.Trainer.train = train

from ftcore.cli import main
sys.exit(main(sys.argv[1:]))
"""


def placed(value, places: dict[str, str]):
    text = json.dumps(value)
    for key, path in places.items():
        text = text.replace("{" + key + "}", path)
    return json.loads(text)


def job(work: str, models: str) -> bool:
    """scripts/gpu-job.json replayed under WORK, the base models in MODELS; checks each stage and its device."""
    fixture = json.loads(FIXTURE.read_text())
    places = {"data": str(Path(work) / "data"), "models": models, "job": JOB_ID, "dataset": "ds_gpucheck", "pid": "0"}
    for name, text in placed(fixture["files"], places).items():
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_text(text)
    figures: dict = {}
    checks: dict[str, bool] = {}
    for step in placed(fixture["steps"], places):
        command = step["argv"][0]
        if "spec" in step:
            spec_file = Path(step["argv"][step["argv"].index("--spec") + 1])
            spec_file.parent.mkdir(parents=True, exist_ok=True)
            spec_file.write_text(json.dumps(step["spec"]))
        if command == "train":
            checks.update(_train(step, figures, Path(places["data"]) / "work" / JOB_ID / "models"))
        elif command == "serve":
            checks.update(_serve(step, figures, _taught(fixture["files"])))
        else:
            done = core(*step["argv"])
            ok = done.returncode == 0
            if not ok:
                print(f"{command} failed: {done.stdout[-1500:]} {done.stderr[-1500:]}")
            _finish_parts(Path(work) / "data")
            checks[command] = ok
            if command == "gguf" and ok:
                checks.update(_gguf(step["spec"], figures))
    for name, ok in checks.items():
        print(f"job: {'ok  ' if ok else 'FAIL'} {name}")
    result(checks=checks, **figures)
    return bool(checks) and all(checks.values())


def _taught(files: dict[str, str]) -> dict[str, str]:
    """question → answer of the job's training rows."""
    rows = [json.loads(line) for name, text in files.items() if name.endswith("train.jsonl") for line in text.splitlines()]
    return {r["messages"][0]["content"]: r["messages"][1]["content"] for r in rows}


def _finish_parts(data: Path) -> None:
    """The worker writes a model into NAME.part-<pid> and renames it NAME when whole (models/blob-folders.ts)."""
    for part in sorted(data.rglob("*.part-0"), key=lambda p: -len(p.parts)):
        part.rename(part.with_name(part.name.removesuffix(".part-0")))


def _train(step: dict, figures: dict, stored: Path) -> dict[str, bool]:
    """The train command under the probe; its adapter then goes where the worker puts the one it fetches back from
    blob storage for inference (models/job-models.ts: <work>/<job>/models/adapter)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as probe:
        done = subprocess.run([sys.executable, "-c", PROBE, *step["argv"]], cwd=CORE, text=True, capture_output=True,
                              env={**os.environ, "FTP_GPU_PROBE": probe.name})
        seen = json.loads(Path(probe.name).read_text() or "{}")
    found = events_of(done.stdout)
    losses = [e["loss"] for e in found if e.get("event") == "progress" and e.get("loss") is not None]
    device = next((e["message"] for e in found if e.get("event") == "log" and e["message"].startswith("training on")), "")
    figures["train"] = {"device_log": device, "probe": seen, "loss_first": losses[:1], "loss_last": losses[-1:],
                        "seconds": next((e["elapsed_seconds"] for e in found if e.get("event") == "done"), None)}
    print(f"train: {device}; during a step: {seen}; loss {losses[:1]} → {losses[-1:]}")
    if done.returncode:
        print(f"train failed: {done.stdout[-2000:]} {done.stderr[-3000:]}")
    for artifact in (e for e in found if e.get("event") == "artifact" and e.get("kind") == "adapter"):
        shutil.copytree(artifact["path"], stored / "adapter", dirs_exist_ok=True)
    frozen = seen.get("frozen", {})
    on_gpu = bool(frozen) and max(frozen, key=frozen.get) == "cuda bfloat16"
    # Liger's fused loss returns no logits (it never makes them); where there are some, they are on the GPU too.
    logits = seen.get("logits")
    return {"train": done.returncode == 0 and len(losses) > 1 and losses[-1] < losses[0] * 0.5,
            "train on cuda in bf16": on_gpu and (logits is None or logits.startswith("cuda"))}


def _serve(step: dict, figures: dict, answers: dict[str, str]) -> dict[str, bool]:
    """The worker's requests, in order, to one warm `ftcore serve`; an evaluation scores the predictions generated just
    before it (the worker's CPU predictions are in the record; these are this machine's)."""
    server = subprocess.Popen([sys.executable, "-m", "ftcore", *step["argv"]], cwd=CORE, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    checks: dict[str, bool] = {}
    logs: list[str] = []
    last_texts: list[str] | None = None
    generated = 0
    for request in step["requests"]:
        if request["op"] == "evaluate" and last_texts is not None:
            request = {**request, "predictions": last_texts}
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        while True:
            line = server.stdout.readline()
            if not line:
                print(f"serve exited: {server.stderr.read()[-3000:]}")
                return {**checks, "serve": False}
            event = json.loads(line) if line.startswith("{") else {}
            if event.get("event") == "log":
                logs.append(event["message"])
            if event.get("id") == request["id"]:
                break
        if event["event"] == "error":
            print(f"{request['op']} {request['id']} failed: {event['message']}")
            checks[f"{request['op']} {request['id']}"] = False
        elif event["event"] == "generated":
            generated += 1
            last_texts = event["texts"]
            if generated == 1:  # the batch inference: the answers the job taught
                asked = [c[-1]["content"] for c in request["conversations"]]
                learned = sum(t.strip() == answers.get(q) for t, q in zip(event["texts"], asked))
                figures["taught_answers"] = f"{learned}/{len(asked)}"
                checks["batch inference gives the taught answers (≥ 3/4)"] = learned >= 3
            figures[f"generate {request['id']}"] = {"texts": event["texts"], "seconds": event["elapsed_seconds"]}
            checks[f"generate {request['id']}"] = True
        elif event["event"] == "scored":
            figures["evaluation"] = event["scores"]
            checks["evaluation exact_match ≥ 0.5"] = event["scores"].get("exact_match", 0) >= 0.5
    server.stdin.close()
    server.wait(timeout=60)
    loaded = [m for m in logs if m.startswith("loaded ")]
    figures["serve_loads"] = loaded
    print(f"serve: {'; '.join(loaded)}")
    checks["inference on cuda in bf16"] = bool(loaded) and all(" on cuda (bfloat16)" in m for m in loaded)
    return checks


def _gguf(spec: dict, figures: dict) -> dict[str, bool]:
    """The f16 GGUF reads, and its token embedding is the merged model's, in f16."""
    import numpy as np
    from gguf import GGUFReader
    from safetensors.numpy import load_file

    output = Path(spec["output_file"].replace(".part-0/", "/"))  # renamed whole (_finish_parts)
    reader = GGUFReader(output)
    types = sorted({t.tensor_type.name for t in reader.tensors})
    embedding = next(t for t in reader.tensors if t.name == "token_embd.weight")
    merged = {}
    for file in Path(spec["model"]).glob("*.safetensors"):
        merged.update(load_file(str(file)))
    source = next(v for k, v in merged.items() if k.endswith("embed_tokens.weight"))
    same = np.allclose(np.asarray(embedding.data, dtype=np.float32).reshape(source.shape), source.astype(np.float16),
                       atol=1e-3)
    figures["gguf"] = {"bytes": output.stat().st_size, "tensors": len(reader.tensors), "types": types}
    print(f"gguf: {len(reader.tensors)} tensors of {types}; token embedding equals the merged model's: {same}")
    return {"gguf reads, f16, weights as merged": "F16" in types and same}


def main(argv: list[str]) -> int:
    what = argv[0] if argv else ""
    if what == "parity":
        return 0 if parity(argv[1]) else 1
    if what == "train-parity":
        train_parity(Path(argv[1]))
        return 0
    if what == "job":
        return 0 if job(argv[1], argv[2]) else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
