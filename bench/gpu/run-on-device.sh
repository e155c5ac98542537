#!/usr/bin/env bash
# Runs on a GPU machine from the repository root, with bench/gpu/pack.sh's output carried as .cache/gpu: kiln (this
# build, "after"), kiln (the base commit, "before") and llama-server (same llama.cpp release, Vulkan) serve a
# random-weight model with a real model's shape, one after the other, under the same load (bench/lib/stream-load.mjs:
# streaming chat completions, unique ~245-token prompts, 128 tokens out), then node-llama-cpp alone (direct-gpu.mjs).
# Results go to $OUT (load.jsonl, direct.jsonl, machine.txt, smi.csv, logs). Env: LEVELS, DURATION, SIDES, PARALLEL.
set -uo pipefail
root="$PWD"; g="$root/.cache/gpu"; w="${KILN_GPU_WORK:-/tmp/kiln-gpu}"; out="${OUT:-/tmp/kiln-gpu-out}"
mkdir -p "$w" "$out"
levels="${LEVELS:-1,8,32,64,8}"; duration="${DURATION:-8}"; parallel="${PARALLEL:-64}"
sides="${SIDES:-after before llama after-uv16}"
log() { echo "[$(date +%T)] $*" | tee -a "$out/run.log"; }

[ -x "$w/node" ] || tar -C "$w" -xJf "$g/node.tar.xz"
export PATH="$w:$PATH"
[ -d "$root/node_modules" ] || tar -C "$root" -xJf "$g/kiln.tar.xz"
[ -d "$w/llama" ] || tar -C "$w" -xJf "$g/llama.tar.xz"
if ! ldconfig -p | grep -q libGLdispatch.so.0; then
  tar -C "$w" -xJf "$g/debs.tar.xz"; for d in "$w"/debs/*.deb; do dpkg -x "$d" /; done; ldconfig
fi
icd="$(ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd*.json /etc/vulkan/icd.d/nvidia_icd*.json 2>/dev/null | head -1)"
[ -n "$icd" ] && export VK_DRIVER_FILES="$icd"
# llama-server loads its backends from its own folder: node-llama-cpp's Vulkan and CPU builds of the same release.
cp node_modules/@node-llama-cpp/linux-x64-vulkan/bins/linux-x64-vulkan/libggml-vulkan.so \
   node_modules/@node-llama-cpp/linux-x64-vulkan/bins/linux-x64-vulkan/libggml-cpu-*.so "$w/llama/"
[ -f "$w/model.gguf" ] || { xz -dc "$g/header.xz" > "$w/header.bin"; node bench/gpu/gen-gguf.mjs "$w/header.bin" "$w/model.gguf"; }

{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; lscpu | grep -m1 "Model name"; node --version; echo "icd: $icd"; } > "$out/machine.txt" 2>&1
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,power.draw --format=csv -l 1 > "$out/smi.csv" 2>/dev/null &
smi=$!

port=5600
wait_ready() { for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$1/$2" >/dev/null 2>&1 && return 0; sleep 0.5; done; return 1; }
for side in $sides; do
  port=$((port + 1)); KILN_HOME="$w/home-$side"; export KILN_HOME
  case "$side" in
    llama) LD_LIBRARY_PATH="$w/llama" "$w/llama/llama-server" -m "$w/model.gguf" -ngl 99 -np "$parallel" -c $((parallel * 4096)) \
             --host 127.0.0.1 --port "$port" > "$out/server-$side.log" 2>&1 & health=health ;;
    before) node before/bin/kiln.js serve --no-auth --port "$port" --parallel "$parallel" --ctx-size 4096 --cache-disk 0 \
             -m "bench=$w/model.gguf" > "$out/server-$side.log" 2>&1 & health=v1/models ;;
    after-uv16) UV_THREADPOOL_SIZE=16 node bin/kiln.js serve --no-auth --port "$port" --parallel "$parallel" --ctx-size 4096 --cache-disk 0 \
             -m "bench=$w/model.gguf" > "$out/server-$side.log" 2>&1 & health=v1/models ;;
    *) node bin/kiln.js serve --no-auth --port "$port" --parallel "$parallel" --ctx-size 4096 --cache-disk 0 \
             -m "bench=$w/model.gguf" > "$out/server-$side.log" 2>&1 & health=v1/models ;;
  esac
  pid=$!
  started=$(date +%s.%N)
  if ! wait_ready "$port" "$health"; then log "$side: not ready"; kill "$pid"; continue; fi
  log "$side: ready in $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $started }") s"
  URL="http://127.0.0.1:$port" LEVELS=4 DURATION=3 LONG_WORDS=0 TAG="$side-warm" node bench/lib/stream-load.mjs > /dev/null 2>&1
  URL="http://127.0.0.1:$port" LEVELS="$levels" DURATION="$duration" LONG_WORDS="${LONG_WORDS:-3000}" TAG="$side" \
    JSON_OUT="$out/load.jsonl" timeout 300 node bench/lib/stream-load.mjs 2>&1 | tail -n +1 >> "$out/run.log"
  curl -s "http://127.0.0.1:$port/metrics" > "$out/metrics-$side.txt" 2>/dev/null
  kill "$pid"; wait "$pid" 2>/dev/null
done
if [ -z "${SKIP_DIRECT:-}" ]; then log "direct"
timeout 180 node bench/gpu/direct-gpu.mjs "$w/model.gguf" > "$out/direct.jsonl" 2>> "$out/run.log"; fi
kill "$smi" 2>/dev/null
log "done"
