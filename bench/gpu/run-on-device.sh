#!/usr/bin/env bash
# Runs on a GPU machine from the repository root, with bench/gpu/pack.sh's output carried as .cache/gpu. Phases, in
# order of what matters most, each under its own time limit so the whole stays inside one call:
#   check    kiln info must see the GPU through llama.cpp (else: diagnostics, and stop at once)
#   probe    (when named) a long uncached prompt in process: kiln's decode steps and the gaps between them beside
#            node-llama-cpp evaluating the same prompt alone (long-prompt-probe.mjs)
#   serve    kiln ("after", this build) and llama-server (same llama.cpp release, Vulkan) serve a random-weight model
#            with a real model's shape, one after the other, under the same load (bench/lib/stream-load.mjs:
#            streaming chat completions, unique ~245-token prompts, 128 tokens out; LEVELS with history checks)
#   critical the host's milliseconds per step between two steps in process, beside the GPU's, at 1–64 streams
#            (bench/investigate/critical-path.js: the share of a step that host work per sequence costs on this card)
#   direct   node-llama-cpp alone (direct-gpu.mjs): a long prompt's rate in one sequence and in the servers' shape,
#            flash attention off and on (DIRECT_GENERATION=1: batched decode too), the ceiling
#   webgpu   bench/webgpu.js on the same model (WebGPU next to llama.cpp in one process)
#   clients  bench/webgpu.js --clients: WebGPU with 1, 2, 4, 8 requests at once (batched decode steps)
#   sampler  bench/step-sampler.js on the GPU: a step's sampling, node-llama-cpp's call per sequence vs kiln's one call
#   profile  bench/webgpu.js --profile (GPU time per kernel class: a token, a prompt chunk, a step of 8 sequences)
#   serve2   more serve sides (SIDES2 at LEVELS2: kiln with flash attention off, BASE's build, after-prof: this build
#            with a CPU profile of its process, summarised), if time is left
# Everything lands in $OUT: run.log as it goes, the rest as results.tar.gz (also on an early exit).
# Env: BUDGET (s, default 450), PHASES, SIDES, LEVELS, SIDES2, LEVELS2, DURATION, PARALLEL, CTX, LONG_WORDS, SIDE_LIMIT (s),
# WEBGPU_ROUNDS, WEBGPU_GENERATE, WEBGPU_BASELINE (1: BASE's WebGPU as a side), DIRECT_GENERATION, REQUIRE_GPU (0 to try
# it on a CPU machine).
set -uo pipefail
root="$PWD"; g="$root/.cache/gpu"; w="${KILN_GPU_WORK:-/tmp/kiln-gpu}"; out="${OUT:-/tmp/kiln-gpu-out}"
started_at=$(date +%s); res="$w/results"; mkdir -p "$w" "$out" "$res"
phases="${PHASES:-check serve critical direct webgpu clients sampler profile serve2}"; sides="${SIDES:-after llama}"
levels="${LEVELS:-1,8,32,64,8,1,8}"; duration="${DURATION:-6}"; parallel="${PARALLEL:-64}"; ctx="${CTX:-10240}"
log() { echo "[$(date +%T)] $*" | tee -a "$out/run.log"; }
finish() { kill "${smi:-}" 2>/dev/null; tar -C "$w" -czf "$out/results.tar.gz" results 2>/dev/null; log "packed $(du -sh "$out/results.tar.gz" | cut -f1)"; }
trap finish EXIT

[ -x "$w/node" ] || tar -C "$w" -xJf "$g/node.tar.xz"
export PATH="$w:$PATH"
[ -d "$root/node_modules" ] || tar -C "$root" -xJf "$g/kiln.tar.xz"
[ -d "$w/llama" ] || tar -C "$w" -xJf "$g/llama.tar.xz"
if ! ldconfig -p | grep -q libGLdispatch.so.0; then
  tar -C "$w" -xJf "$g/debs.tar.xz"; for d in "$w"/debs/*.deb; do dpkg -x "$d" /; done; ldconfig
fi
icd="$(ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd*.json /etc/vulkan/icd.d/nvidia_icd*.json 2>/dev/null | head -1)"
[ -n "$icd" ] && export VK_DRIVER_FILES="$icd"
egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f "$egl" ] && export __EGL_VENDOR_LIBRARY_FILENAMES="$egl"
# llama-server loads its backends from its own folder: node-llama-cpp's Vulkan and CPU builds of the same release.
vk=node_modules/@node-llama-cpp/linux-x64-vulkan/bins/linux-x64-vulkan
cp "$vk"/libggml-vulkan.so "$vk"/libggml-cpu-*.so "$w/llama/" 2>/dev/null
model="$w/qwen2.5-coder-1.5b-random.gguf"
[ -f "$model" ] || { xz -dc "$g/header.xz" > "$w/header.bin"; node bench/gpu/gen-gguf.mjs "$w/header.bin" "$model"; }
log "unpacked; model $(du -h "$model" | cut -f1)"

{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nproc; lscpu | grep -m1 "Model name"; node --version; echo "icd: $icd"; } > "$res/machine.txt" 2>&1
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,power.draw --format=csv -l 1 > "$res/smi.csv" 2>/dev/null &
smi=$!

# A phase runs when asked for and while BUDGET seconds (from the start) leave it room.
left() { echo $(( ${BUDGET:-450} - ($(date +%s) - started_at) )); }
lim() { local l=$(( $(left) - 15 )); [ "$1" -lt "$l" ] && echo "$1" || echo $(( l > 5 ? l : 5 )); }
has() { case " $phases " in *" $1 "*) [ "$(left)" -gt "${2:-60}" ] || { log "$1: skipped, $(left) s left"; return 1; } ;; *) return 1 ;; esac; }

if has check; then
  timeout 60 node bin/kiln.js info > "$res/info.txt" 2>&1; timeout 60 node bin/kiln.js info --backend webgpu > "$res/info-webgpu.txt" 2>&1
  cat "$res/info.txt" "$res/info-webgpu.txt" >> "$out/run.log"
  if [ "${REQUIRE_GPU:-1}" = 1 ] && ! grep -qE "^gpu +(vulkan|cuda)" "$res/info.txt"; then
    log "llama.cpp sees no GPU: stopping"; ldconfig -p | grep -i -E "vulkan|glvnd|GLdispatch|EGL" >> "$out/run.log"
    NODE_LLAMA_CPP_DEBUG=true timeout 60 node -e 'import("node-llama-cpp").then(async (m) => { const l = await m.getLlama({ build: "never", gpu: "vulkan", logLevel: m.LlamaLogLevel.debug }); console.log(l.gpu); }).catch((e) => console.log(String(e)))' >> "$out/run.log" 2>&1
    exit 1
  fi
fi

wait_ready() { for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$1/$2" >/dev/null 2>&1 && return 0; sleep 0.5; done; return 1; }
port=5600
serve_sides() { local levels="$2"; for side in $1; do
  port=$((port + 1)); KILN_HOME="$w/home-$side"; export KILN_HOME
  case "$side" in
    llama) LD_LIBRARY_PATH="$w/llama" "$w/llama/llama-server" -m "$model" -ngl 99 -np "$parallel" -c $((parallel * ctx)) \
             --host 127.0.0.1 --port "$port" > "$res/server-$side.log" 2>&1 & health=health ;;
    before) node before/bin/kiln.js serve --no-auth --port "$port" --parallel "$parallel" --ctx-size "$ctx" --cache-disk 0 \
             -m "bench=$model" > "$res/server-$side.log" 2>&1 & health=v1/models ;;
    after-fa-off) node bin/kiln.js serve --no-auth --port "$port" --parallel "$parallel" --ctx-size "$ctx" --cache-disk 0 --flash-attention off \
             -m "bench=$model" > "$res/server-$side.log" 2>&1 & health=v1/models ;;
    after-prof) node --cpu-prof --cpu-prof-dir="$w/prof" bin/kiln.js serve --no-auth --port "$port" --parallel "$parallel" --ctx-size "$ctx" --cache-disk 0 \
             -m "bench=$model" > "$res/server-$side.log" 2>&1 & health=v1/models ;;
    *) node bin/kiln.js serve --no-auth --port "$port" --parallel "$parallel" --ctx-size "$ctx" --cache-disk 0 \
             -m "bench=$model" > "$res/server-$side.log" 2>&1 & health=v1/models ;;
  esac
  pid=$!; started=$(date +%s.%N)
  if ! wait_ready "$port" "$health"; then log "$side: not ready"; tail -5 "$res/server-$side.log" >> "$out/run.log"; kill "$pid"; continue; fi
  log "$side: ready in $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $started }") s"
  URL="http://127.0.0.1:$port" LEVELS=8 DURATION=3 LONG_WORDS=0 TAG="$side-warm" timeout 30 node bench/lib/stream-load.mjs > /dev/null 2>&1
  # One level at a time, /metrics after each (the step clock's host and compute time per level), then the long prompt.
  local until=$(( $(date +%s) + $(lim "${SIDE_LIMIT:-150}") ))
  for level in ${levels//,/ } long; do
    [ "$(date +%s)" -lt "$until" ] || { log "$side: out of time before $level"; break; }
    if [ "$level" = long ]; then load=(LEVELS= LONG_WORDS="${LONG_WORDS:-5600}"); else load=(LEVELS="$level" LONG_WORDS=0); fi
    env URL="http://127.0.0.1:$port" DURATION="$duration" TAG="$side" JSON_OUT="$res/load.jsonl" "${load[@]}" \
      timeout $(( until - $(date +%s) + 5 )) node bench/lib/stream-load.mjs >> "$out/run.log" 2>&1
    { echo "# after level $level"; curl -s "http://127.0.0.1:$port/metrics" | grep -E "^kiln_decode_step"; } >> "$res/metrics-$side.txt" 2>/dev/null
  done
  curl -s "http://127.0.0.1:$port/v1/models" > "$res/models-$side.json" 2>/dev/null
  kill "$pid"; wait "$pid" 2>/dev/null
  # A profiled side's CPU profile, summarised here (the raw profile is tens of MB).
  for p in "$w"/prof/*.cpuprofile; do [ -f "$p" ] && node bench/gpu/profile-summary.mjs "$p" >> "$res/profile-$side.txt" 2>&1; rm -f "$p"; done
done; }

[ -n "${WEBGPU_BASELINE:-}" ] && export BENCH_WEBGPU_BASELINE="$root/before/dist"
if has probe; then log "probe"
  PARALLEL="$parallel" CTX="$ctx" timeout "$(lim 90)" node bench/gpu/long-prompt-probe.mjs "$model" > "$res/probe.jsonl" 2>> "$res/probe.log"; cat "$res/probe.jsonl" >> "$out/run.log"
fi
has serve && serve_sides "$sides" "$levels"
if has critical; then log "critical"
  BENCH_MODEL_PATH="$model" STREAMS="${CRITICAL_STREAMS:-1,8,32,64}" ROUNDS=2 timeout "$(lim 90)" node bench/investigate/critical-path.js \
    > "$res/critical.md" 2>> "$res/critical.log"; cat "$res/critical.md" >> "$out/run.log"
fi
if has direct; then log "direct"
  DIRECT_GENERATION="${DIRECT_GENERATION:-0}" timeout "$(lim 120)" node bench/gpu/direct-gpu.mjs "$model" > "$res/direct.jsonl" 2>> "$res/direct.log"; cat "$res/direct.jsonl" >> "$out/run.log"
fi
if has webgpu; then log "webgpu"
  BENCH_MODEL_PATH="$model" BENCH_TAG=gpu ROUNDS="${WEBGPU_ROUNDS:-2}" BENCH_GENERATE="${WEBGPU_GENERATE:-64}" \
    timeout "$(lim 120)" node bench/webgpu.js >> "$res/webgpu.log" 2>&1; tail -12 "$res/webgpu.log" >> "$out/run.log"
  cp bench/results/*webgpu*-gpu.* "$res/" 2>/dev/null
fi
if has clients; then log "clients"
  BENCH_MODEL_PATH="$model" BENCH_TAG=gpu ROUNDS="${CLIENT_ROUNDS:-1}" \
    timeout "$(lim 90)" node bench/webgpu.js --clients >> "$res/clients.log" 2>&1; tail -12 "$res/clients.log" >> "$out/run.log"
  cp bench/results/*webgpu-clients*-gpu.* "$res/" 2>/dev/null
fi
if has sampler; then log "sampler"
  BENCH_SAMPLER_MODELS="$model" BENCH_SAMPLER_GPU=1 timeout "$(lim 90)" node bench/step-sampler.js >> "$res/sampler.log" 2>&1
  tail -8 "$res/sampler.log" >> "$out/run.log"; cp bench/results/*step-sampler-gpu.* "$res/" 2>/dev/null
fi
if has profile; then log "profile"
  BENCH_MODEL_PATH="$model" BENCH_TAG=gpu-profile BENCH_GENERATE="${WEBGPU_GENERATE:-32}" timeout "$(lim 90)" node bench/webgpu.js --profile >> "$res/profile.log" 2>&1
  tail -45 "$res/profile.log" >> "$out/run.log"; cp bench/results/*webgpu*gpu-profile.* "$res/" 2>/dev/null
fi
# kiln with flash attention off and BASE's build, at the levels that tell them apart, if time is left.
has serve2 120 && serve_sides "${SIDES2:-after-fa-off before}" "${LEVELS2:-8,32,64}"
log "done"
