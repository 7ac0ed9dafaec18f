"""scripts/gpu-check.sh: a GPU machine checked end to end in two device calls (#37), made to fit one 15-minute lease.

Here (a machine with the package registries), `prepare` packs what each call needs into .gpu/<call>/bundle.tar.xz
(ignored by git; at most BUNDLE_MIB, so the bundle and the working tree fit the 64 MiB a call carries) with its
manifest.json, and prints what each call carries:
  call1  generation (bench/generate/gpu.py generate, sized to ~3 minutes with its compile), cuda-tests (the core's
         CUDA-marked tests, none skipped) and parity (the engine's bf16 parity on a tiny model trained here to recite
         long answers: scripts/gpu_parts.py parity);
  call2  job (scripts/gpu-job.json, the core commands and serve requests a real worker wrote for the tiny model's QA
         job, replayed: LoRA SFT → batch inference → evaluation → f16 GGUF; scripts/gpu_parts.py job) and grpo
         (bench/generate/gpu.py grpo: whole GRPO steps, the core's against TRL's default generation).
Each bundle holds the core's locked packages its parts import that the machine's image lacks or holds in another
version (installed here for CPython 3.12, then xz'd), and the small models its parts use. Node does not travel.
There (PyTorch and CUDA, nothing of ours, no network), `run CALL [PART ...]` unpacks the carried bundle (once per
machine) and runs the call's parts, or the ones named, in order. Each part prints `GPU-CHECK PART: PASS|FAIL` with its
target MET/MISSED, and its figures go to $OUT/gpu-check.json as it finishes (a call cut off still reports the rest).

    bash scripts/gpu-check.sh prepare                       here; prints each call's carried bytes and command
    bash scripts/gpu-check.sh run call1|call2 [PART ...]    there, carrying .gpu/<call>
    bash scripts/gpu-check.sh run call1|call2 --here        here, on the core's venv and the CPU: the parts' code
                                                            path (their device checks fail, as they should)
    bash scripts/gpu-check.sh run train bench-train|bench-train-8b    bench/train's GPU half, apart from the check
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACK = ROOT / ".gpu"
CACHE = ROOT / ".gpu-cache"
THERE = Path(os.environ.get("GPU_CHECK_HOME", "/tmp/gpu-check"))
CARRY_MIB = 64  # what one device call carries: the working tree, shared/ and the carried paths
BUNDLE_MIB = 56
# What the core imports for training and generation on CUDA, from our lock even where the image has another version
# (transformers 4.57 wants tokenizers < 0.23 and huggingface-hub < 1.0; TRL 0.24 and PEFT 0.17 go with it; datasets 4.3
# wants fsspec ≤ 2025.9.0). The rest (numpy, pyarrow, pandas, psutil, jinja2, …) is the image's.
COMMON = ["transformers", "tokenizers", "huggingface-hub", "safetensors", "peft", "trl", "accelerate", "datasets",
          "fsspec", "dill", "multiprocess", "liger-kernel"]
CALLS = {
    "call1": {"parts": ["generation", "cuda-tests", "parity"], "packages": [*COMMON, "bitsandbytes"],
              "models": ["parity"]},
    # the job's GGUF export and its evaluation metrics (exact_match, f1, rouge: no BERTScore encoder travels)
    "call2": {"parts": ["job", "grpo"], "packages": [*COMMON, "gguf", "rouge-score", "nltk"], "models": ["tiny"]},
    # Not part of the check: bench/train's GPU half (the 1B shape, QLoRA parity; the 8B shape at NeMo's settings, #30),
    # each a command of its own.
    "train": {"parts": ["bench-train", "bench-train-8b"], "packages": [*COMMON, "bitsandbytes"], "models": []},
}
CHECK = ["call1", "call2"]
# Seconds a part may take, so that a call ends inside its command's limit and reports what it did.
# (2026-11-29 on an H200: the 7 CUDA tests took 119 s, the first of them 70; the parity 55 s.)
PART_LIMIT_S = {"generation": 240, "cuda-tests": 150, "parity": 75, "job": 150, "grpo": 200, "bench-train": 570,
                "bench-train-8b": 570}
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64", "manylinux_2_34_x86_64", "manylinux_2_35_x86_64"]
TARGET = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
          "platform_machine": "x86_64", "platform_system": "Linux", "os_name": "posix",
          "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}
CORE_VENV_PYTHON = ROOT / "core" / ".venv" / "bin" / "python"


def say(*parts) -> None:
    print("gpu-check:", *parts, flush=True)


# ---------------------------------------------------------------------------------------------------------- here


def locked_versions() -> dict[str, str]:
    """name → version of every package the core's lock installs, for Linux x86-64 Python 3.12."""
    from pip._vendor.packaging.markers import Marker

    out = subprocess.run(["uv", "export", "--frozen", "--no-hashes", "--no-emit-project"],
                         cwd=ROOT / "core", check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "-", ".")):
            continue
        requirement, _, marker = line.partition(" ; ")
        if marker and not Marker(marker).evaluate(TARGET):
            continue
        name, _, version = requirement.partition("==")
        found[name.strip().lower()] = version.strip()
    return found


def wheel(name: str, version: str) -> Path:
    """The cp312 manylinux (or pure) wheel of name==version, downloaded once into .gpu-cache/wheels; a package PyPI
    has only as a source distribution is built into a wheel here (pure Python ones: rouge-score)."""
    cache = CACHE / "wheels"
    cache.mkdir(parents=True, exist_ok=True)
    if have := _cached_wheel(name, version, cache):
        return have
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    got = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                          "--python-version", "3.12", "--implementation", "cp", *platforms, "-d", str(cache),
                          f"{name}=={version}"], capture_output=True, text=True)
    if got.returncode != 0:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(cache),
                        f"{name}=={version}"], check=True)
    if have := _cached_wheel(name, version, cache):
        return have
    raise SystemExit(f"no wheel of {name}=={version} came")


def _cached_wheel(name: str, version: str, cache: Path) -> Path | None:
    stem = name.replace("-", "_").lower()
    return next((w for w in cache.glob("*.whl") if w.name.lower().startswith(f"{stem}-{version}-")), None)


def slim_bitsandbytes(source: Path, into: Path) -> Path:
    """bitsandbytes holds one 18 MB library per CUDA version: keep CUDA 13's (the machine's PyTorch) and the CPU one,
    and their RECORD lines (bench/train/README.md)."""
    target = into / source.name
    keep = lambda n: "libbitsandbytes_cuda" not in n or "cuda130" in n  # noqa: E731
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            if not keep(item.filename):
                continue
            data = zin.read(item)
            if item.filename.endswith("RECORD"):
                data = b"".join(line + b"\n" for line in data.splitlines() if line and keep(line.decode()))
            zout.writestr(item, data)
    return target


def site_packages(packages: list[str], versions: dict[str, str], stage: Path) -> list[str]:
    """The packages' wheels at their `versions` (the lock's) installed for CPython 3.12 into stage/site (no byte code:
    it would be 3.11's)."""
    wheels = stage / "wheels"
    wheels.mkdir(parents=True)
    names = []
    for name in packages:
        got = wheel(name, versions[name])
        slim_bitsandbytes(got, wheels) if name == "bitsandbytes" else shutil.copy2(got, wheels / got.name)
        names.append(got.name)
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--no-index",
                    "--target", str(stage / "site"), "--python-version", "3.12", "--implementation", "cp",
                    "--only-binary=:all:", *platforms, *map(str, sorted(wheels.glob("*.whl")))], check=True)
    shutil.rmtree(wheels)
    return names


def make_models(names: list[str], into: Path) -> None:
    """The parts' small models, made here with the core: `tiny` as the tests' tinyModelsDir makes it (the job's
    base), `parity` trained to recite (scripts/gpu_parts.py)."""
    for name in names:
        cached = CACHE / "models" / name
        if not (cached / "config.json").is_file():
            python = str(CORE_VENV_PYTHON)
            if name == "tiny":
                subprocess.run([python, "-m", "ftcore", "make-tiny-model", "--output_dir", str(cached)],
                               cwd=ROOT / "core", check=True, capture_output=True)
            else:
                subprocess.run([python, str(ROOT / "scripts" / "gpu_parts.py"), "train-parity", str(cached)], check=True)
        shutil.copytree(cached, into / name)


def tree_bytes() -> int:
    """What a device call carries besides .gpu/<call>: the tracked files and those untracked that git does not
    ignore."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.split(b"\0")
    return sum((ROOT / name.decode()).stat().st_size for name in listed if name and (ROOT / name.decode()).is_file())


def prepare() -> None:
    tree = tree_bytes()
    locked = locked_versions()  # the core lock's versions, for Linux x86-64 Python 3.12: one `uv export` for every call
    for call, plan in CALLS.items():
        stage = CACHE / "stage" / call
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        wheels = site_packages(plan["packages"], locked, stage)
        (stage / "models").mkdir()
        make_models(plan["models"], stage / "models")
        bundle = PACK / call / "bundle.tar.xz"
        shutil.rmtree(bundle.parent, ignore_errors=True)
        bundle.parent.mkdir(parents=True)
        subprocess.run(["tar", "-C", str(stage), "-cJf", str(bundle), "site", "models"], check=True,
                       env={**os.environ, "XZ_OPT": "-9 -T0"})
        data = bundle.read_bytes()
        manifest = {"call": call, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), "wheels": wheels,
                    "torch": locked["torch"],
                    "models": plan["models"], "parts": plan["parts"],
                    "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        (bundle.parent / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        carried = len(data) + tree
        say(f"{call} ({', '.join(plan['parts'])}): bundle {len(data) / 2**20:.1f} MiB ({len(wheels)} wheels, models "
            f"{', '.join(plan['models']) or 'none'}) + working tree {tree / 2**20:.1f} MiB = {carried / 2**20:.1f} MiB carried "
            f"of {CARRY_MIB}")
        if len(data) > BUNDLE_MIB * 2**20 or carried > CARRY_MIB * 2**20:
            raise SystemExit(f"gpu-check: {call} carries too much: leave something out")
    say("on the GPU machine, two calls back to back (it stays warm 30 s after each; a failed part can be rerun alone):")
    for call in CHECK:
        say(f"  bash scripts/gpu-check.sh run {call}        carry ['.gpu/{call}']")
    say("and, apart from the check, bench/train's GPU half: bash scripts/gpu-check.sh run train bench-train|bench-train-8b"
        "   carry ['.gpu/train']")


# --------------------------------------------------------------------------------------------------------- there


def unpack(call: str) -> Path:
    """The carried bundle unpacked (once per machine and bundle); its folder."""
    folder = PACK / call
    manifest = json.loads((folder / "manifest.json").read_text())
    home = THERE / manifest["sha256"][:16]
    if (home / "unpacked").is_file():
        return home
    data = (folder / "bundle.tar.xz").read_bytes()
    if hashlib.sha256(data).hexdigest() != manifest["sha256"]:
        raise SystemExit(f"gpu-check: .gpu/{call}/bundle.tar.xz is not the one its manifest names: prepare again")
    home.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tarfile.open(folder / "bundle.tar.xz") as tar:
        tar.extractall(home, filter="data")
    (home / "unpacked").write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    say(f"{call}: unpacked in {time.monotonic() - started:.0f} s")
    return home


class Check:
    """Runs parts with the core's packages and writes each one's outcome into $OUT/gpu-check.json as it ends."""

    def __init__(self, call: str, here: bool):
        self.call, self.here = call, here
        if here:
            self.python, self.home, site = str(CORE_VENV_PYTHON), CACHE / "stage" / call, []
        else:
            self.python, self.home = sys.executable, unpack(call)
            site = [str(self.home / "site")]
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1",
                    "PYTHONPATH": os.pathsep.join([*site, str(ROOT / "core" / "src")]),
                    "GPU_CHECK_SITE": site[0] if site else ""}
        self.out = Path(os.environ.get("OUT", "/tmp/gpu-check-out"))
        self.out.mkdir(parents=True, exist_ok=True)
        self.report_file = self.out / "gpu-check.json"
        self.report = json.loads(self.report_file.read_text()) if self.report_file.is_file() else {}
        self.report.setdefault("machine", self.machine())

    def machine(self) -> dict:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True) if shutil.which("nvidia-smi") else None
        versions = subprocess.run([self.python, "-c", "import sys, torch, transformers, trl, peft; print('python', "
                                   "sys.version.split()[0], 'torch', torch.__version__, 'transformers', "
                                   "transformers.__version__, 'trl', trl.__version__, 'peft', peft.__version__)"],
                                  env=self.env, capture_output=True, text=True)
        found = {"gpu": smi.stdout.strip() if smi else "none", "packages": versions.stdout.strip() or versions.stderr[-500:]}
        # The device runs the image's torch under our other pins: the core's lock names the same release (#62), and
        # the report says so when they part.
        manifest = PACK / self.call / "manifest.json"
        locked = json.loads(manifest.read_text()).get("torch") if manifest.is_file() else None
        running = found["packages"].split(" torch ")[1].split()[0] if " torch " in found["packages"] else None
        if locked and running:
            found["torch_as_locked"] = running.split("+")[0] == locked
            if not found["torch_as_locked"]:
                say(f"torch {running} here, {locked} in the core's lock: results may differ from CPU's")
        say(f"{found['gpu']}; {found['packages']}")
        return found

    def command(self, argv: list[str], limit: float, cwd: Path = ROOT) -> tuple[int, list[dict]]:
        """Runs argv with the core's packages, its output passed through; (exit code, the RESULT lines' objects).
        Past `limit` seconds it is stopped (exit code 124)."""
        results: list[dict] = []
        child = subprocess.Popen(argv, cwd=cwd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, start_new_session=True)
        deadline = time.monotonic() + limit
        import selectors

        watch = selectors.DefaultSelector()
        watch.register(child.stdout, selectors.EVENT_READ)
        while True:
            if time.monotonic() > deadline:
                os.killpg(child.pid, 9)
                child.wait()
                say(f"stopped after {limit:.0f} s (the part's limit)")
                return 124, results
            if not watch.select(timeout=1):
                continue
            line = child.stdout.readline()
            if not line:
                break
            print(line, end="", flush=True)
            if line.startswith("RESULT "):
                results.append(json.loads(line.removeprefix("RESULT ")))
        return child.wait(), results

    def run(self, part: str) -> bool:
        say(f"--- {part}")
        started = time.monotonic()
        ok, figures, target = getattr(self, "part_" + part.replace("-", "_"))(PART_LIMIT_S[part])
        seconds = time.monotonic() - started
        met = "" if target is None else (" — target MET" if target else " — target MISSED")
        say(f"GPU-CHECK {part}: {'PASS' if ok else 'FAIL'} in {seconds:.0f} s{met}")
        self.report[part] = {"status": "PASS" if ok else "FAIL", "target": None if target is None else
                             ("MET" if target else "MISSED"), "seconds": round(seconds, 1), "figures": figures,
                             "here": self.here}
        self.report_file.write_text(json.dumps(self.report, indent=1) + "\n")
        return ok

    # The parts: each returns (PASS, figures, target met or None when it has none).

    def part_generation(self, limit: float):
        # plain generate's rate does not depend on how many batches of 8 it runs: one is enough (#37's 7 minutes;
        # two took 36 s)
        flags = ["--dry-run"] if self.here else ["--baseline-prompts", "8"]
        code, results = self.command([self.python, "bench/generate/gpu.py", "generate", *flags], limit)
        report = next((r["generate"] for r in results if "generate" in r), {})
        share = report.get("engine_64_share_of_bound")
        ok = code == 0 and report.get("engine_compiled") is True
        return ok, report, (None if share is None or share != share else share >= 0.25)

    def part_cuda_tests(self, limit: float):
        junit = self.out / "core-tests.xml"
        code, _ = self.command([self.python, "-m", "pytest", "-m", "cuda", "-q", "-rs", "-p", "no:cacheprovider",
                                f"--junitxml={junit}", "tests/test_cuda.py"], limit, cwd=ROOT / "core")
        ran, skipped = cuda_tests_ran(junit)
        return code == 0 and ran > 0 and not skipped, {"tests_passed": code == 0, "ran": ran, "skipped": skipped}, None

    def part_parity(self, limit: float):
        code, results = self.command([self.python, "scripts/gpu_parts.py", "parity",
                                      str(self.home / "models" / "parity")], limit)
        return code == 0, results[-1] if results else {}, None

    def part_job(self, limit: float):
        work = Path(os.environ.get("TMPDIR", "/tmp")) / f"gpu-check-job-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        code, results = self.command([self.python, "scripts/gpu_parts.py", "job", str(work),
                                      str(self.home / "models")], limit)
        shutil.rmtree(work, ignore_errors=True)
        return code == 0, results[-1] if results else {}, None

    def part_bench_train(self, limit: float, what: tuple[str, ...] = ("qlora", "bench")):
        code, _ = self.command(["bash", "bench/train/gpu.sh", *what], limit)
        return code == 0, {}, None

    def part_bench_train_8b(self, limit: float):
        return self.part_bench_train(limit, ("bench", "--", "--shape", "8b", "--no-profile"))

    def part_grpo(self, limit: float):
        # the median of 2 steps after the first, each contender's (3 took 170 s of the 7 minutes on an H200)
        code, results = self.command([self.python, "bench/generate/gpu.py", "grpo",
                                      *(["--dry-run"] if self.here else ["--steps", "2"])], limit)
        report = next((r["grpo"] for r in results if "grpo" in r), {})
        ratio = report.get("ratio_core_over_trl")
        return code == 0 and ratio is not None, report, (None if ratio is None or self.here else ratio >= 3)


def cuda_tests_ran(junit: Path) -> tuple[int, list[str]]:
    """(tests of test_cuda.py that ran, names of those skipped), from pytest's junit report."""
    import xml.etree.ElementTree as ET

    if not junit.is_file():
        return 0, []
    cases = [c for c in ET.parse(junit).iter("testcase") if c.get("classname", "").endswith("test_cuda")]
    skipped = [c.get("name") for c in cases if c.find("skipped") is not None]
    say(f"cuda tests: {len(cases) - len(skipped)} ran, {len(skipped)} skipped {skipped or ''}")
    return len(cases) - len(skipped), skipped


def main(argv: list[str]) -> int:
    if argv[:1] == ["prepare"]:
        prepare()
        return 0
    if argv[:1] != ["run"] or len(argv) < 2 or argv[1] not in CALLS:
        print(__doc__)
        return 2
    call, rest = argv[1], argv[2:]
    here = "--here" in rest
    parts = [p for p in rest if p != "--here"] or CALLS[call]["parts"]
    if unknown := [p for p in parts if p not in CALLS[call]["parts"]]:
        raise SystemExit(f"gpu-check: {call} has no part {unknown}: {', '.join(CALLS[call]['parts'])}")
    started = time.monotonic()
    check = Check(call, here)
    outcome = {part: check.run(part) for part in parts}
    say(f"{call} in {time.monotonic() - started:.0f} s: "
        + ", ".join(f"{p} {'PASS' if ok else 'FAIL'}" for p, ok in outcome.items()))
    return 0 if all(outcome.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
