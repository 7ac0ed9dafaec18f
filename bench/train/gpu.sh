#!/usr/bin/env bash
# The GPU half of bench/train on a machine with PyTorch and CUDA and nothing of ours: installs the wheels carried in
# .whl (bench/train/README.md says which), then runs the QLoRA check and/or the throughput benchmark.
#   bash bench/train/gpu.sh [qlora] [bench] [-- gpu.py flags]     (default: both; logs and qlora.tar.gz go to $OUT)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/bench-train-out}
mkdir -p "$OUT"
# scripts/gpu-check.sh run train bench-train unpacked the core's packages already (GPU_CHECK_SITE)
site=${GPU_CHECK_SITE:-/tmp/site}
[[ -n ${GPU_CHECK_SITE:-} ]] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl
export PYTHONPATH=$site:$PWD/core/src PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
what=(); flags=()
while (($#)); do
  if [[ $1 == -- ]]; then shift; flags=("$@"); break; fi
  what+=("$1"); shift
done
((${#what[@]})) || what=(qlora bench)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c 'import torch, transformers, trl, peft; print("torch", torch.__version__, "transformers", transformers.__version__, "trl", trl.__version__, "peft", peft.__version__)'
failed=0
for w in "${what[@]}"; do
  case $w in
    qlora) rm -rf /tmp/qlora && mkdir -p /tmp/qlora && python3 bench/train/gpu_qlora.py /tmp/qlora "$OUT/qlora.tar.gz" 2>&1 | tee "$OUT/qlora.log" || { echo "QLORA CHECK FAILED"; failed=1; } ;;
    bench) python3 bench/train/gpu.py "${flags[@]}" 2>&1 | tee "$OUT/bench.log" || { echo "BENCH FAILED"; failed=1; } ;;
  esac
done
exit $failed
