#!/usr/bin/env bash
# One command for a machine with one H200 (Python 3.12, torch 2.11+cu130, nvcc 13.0, no network,
# 16 cores), in under 10 minutes:
#   1. builds gelu_ext there (sm_90 only, all cores);
#   2. runs the C++ checks' error paths on CUDA tensors alone (no other test beside them), then
#      the CUDA tests;
#   3. runs the GPU part of bench/bench.py, with the measured copy bandwidth;
#   4. checks float16/bfloat16 exhaustively on the GPU (every pass) and float32 exhaustively (all
#      2^32 inputs, forward and backward, each variant), last, as the longest step.
# The log (gpu_check.log) and tables go to the folder given as the first argument (eight files,
# the most a device run returns); a short summary comes last.
#
#   bash bench/gpu_check.sh OUT_DIR
set -uo pipefail
out=${1:?usage: bash bench/gpu_check.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONUNBUFFERED=1
python=${PYTHON:-python3}
start=$SECONDS
status=()

log="$out/gpu_check.log"
: > "$log"
step() {  # step NAME COMMAND...: runs it into the log, records pass/fail and the time
  local name=$1
  shift
  local t0=$SECONDS part
  part=$(mktemp)
  echo "== $name ($(date +%H:%M:%S))" | tee -a "$log"
  if "$@" > "$part" 2>&1; then
    status+=("$(printf '%-34s passed  %4ds' "$name" $((SECONDS - t0)))")
  else
    status+=("$(printf '%-34s FAILED  %4ds' "$name" $((SECONDS - t0)))")
    tail -20 "$part"
  fi
  cat "$part" >> "$log"
  rm -f "$part"
}

step "machine" "$python" -c "import subprocess, torch
print(subprocess.run(['nvidia-smi'], capture_output=True, text=True).stdout)
print('torch', torch.__version__, 'CUDA', torch.version.cuda, torch.cuda.get_device_name())"

# 1. Build: sm_90 only, all cores; GELU_EXT_CUDA=1 fails loudly if CUDA cannot be built. The
#    package is installed, and everything below runs from outside the source tree so that Python
#    imports the built package.
cd "$repo"
step "build (sm_90, $(nproc) jobs)" env TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS="$(nproc)" \
  GELU_EXT_CUDA=1 "$python" -m pip install --no-build-isolation --no-deps -v .
cd "$out"

# 2. The C++ checks' error paths on CUDA tensors, in one process with nothing beside them; then
#    the CUDA tests (every test that runs on the GPU), in parallel where pytest-xdist is there.
step "CUDA error paths (serial)" "$python" -m pytest "$repo/tests/test_errors.py" \
  "$repo/tests/test_fused.py" -q -k "cuda and (error or mismatch or written)" -p no:xdist \
  -p no:cacheprovider
xdist=()
"$python" -c "import xdist" 2>/dev/null && xdist=(-n 8)
step "CUDA tests" "$python" -m pytest "$repo/tests" -q -rs "${xdist[@]}" \
  -k "cuda" -p no:cacheprovider

# 3. Speed: the GPU part of bench/bench.py (it prints the copy bandwidth first).
step "bench (GPU): gelu" "$python" "$repo/bench/bench.py" --device cuda --ops gelu \
  --dtypes float32 bfloat16 float16 --sizes 16 20 24 26 --budget 0.1 --out "$out"
step "bench (GPU): fused ops" "$python" "$repo/bench/bench.py" --device cuda \
  --ops bias_gelu geglu --dtypes float32 bfloat16 --variants none tanh --budget 0.1 --no-plot \
  --out "$out/fused"

# 4. Accuracy on the GPU: 16-bit exhaustively, then float32 exhaustively (forward, backward).
step "16-bit exhaustive accuracy (GPU)" "$python" "$repo/bench/accuracy.py" \
  --devices cuda --dtypes bfloat16 float16 --no-validate --no-plot --out "$out"
step "float32 exhaustive accuracy (GPU)" "$python" "$repo/bench/accuracy.py" \
  --devices cuda --dtypes float32 --directions forward backward --exhaustive --no-validate \
  --no-plot --out "$out"

echo
echo "== summary ($((SECONDS - start)) s)"
printf '%s\n' "${status[@]}"
echo
echo "-- accuracy (max ulp error, share correctly rounded; gelu_ext then F.gelu)"
grep -h "^| cuda" "$out"/accuracy_exhaustive.md "$out"/accuracy.md 2>/dev/null |
  awk -F'|' '{printf "%-9s %-8s %-9s %s %s %s %s\n", $3, $4, $5, $7, $9, $10, $12}'
echo
echo "-- speed at 2^24 elements and more (gelu_ext GB/s, % of copy, x eager, x compile)"
grep -E "copy bandwidth" "$log" | head -1
awk -F'|' '/^\| / && $6 ~ /(16777216|67108864|8192x3072|4096x)/ {printf "%-10s %-17s %-8s %-9s %-10s %8s %6s %8s %8s\n", $2, $3, $4, $5, $6, $10, $11, $12, $13}' \
  "$out"/bench_cuda*.md "$out"/fused/bench_cuda*.md 2>/dev/null
failed=0
for s in "${status[@]}"; do [[ $s == *FAILED* ]] && failed=1; done
exit $failed
