#!/usr/bin/env bash
# Packs what a GPU machine without network or Node.js needs to run kiln's GPU benchmark (bench/gpu/run-on-device.sh):
# a Node.js binary, kiln's runtime (this checkout's build as "after", and BASE's build as "before"), llama-server built
# against the same llama.cpp release (bench/lib/llama-cpp-build.js, whose dynamic backends it loads from
# node-llama-cpp's Vulkan prebuilt on the device), the Vulkan loader, and the header of the model whose shape is timed.
# Output: .cache/gpu/*.tar.xz (under 64 MiB in all). Env: BASE (commit, default HEAD~1), MODEL_PATH (GGUF whose header
# is taken), LLAMA_BIN (llama-server build folder).
set -euo pipefail
export XZ_OPT="${XZ_OPT:--6 -T0}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/.cache/gpu"; stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$out"
base="${BASE:-HEAD~1}"

# Node.js, stripped.
cp "$(command -v node)" "$stage/node" && strip "$stage/node"
tar -C "$stage" -cJf "$out/node.tar.xz" node

# Runtime dependencies only, for linux-x64 (CPU and Vulkan prebuilts; CUDA's 540 MB left out).
mkdir -p "$stage/kiln/rt"
git -C "$root" show HEAD:package.json > "$stage/kiln/rt/package.json"
git -C "$root" show HEAD:package-lock.json > "$stage/kiln/rt/package-lock.json"
(cd "$stage/kiln/rt" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --offline >/dev/null)
nm="$stage/kiln/rt/node_modules"
rm -rf "$nm"/@node-llama-cpp/{linux-arm64,linux-armv7l,linux-x64-cuda,linux-x64-cuda-ext} "$nm"/node-llama-cpp/llama/gitRelease.bundle
find "$nm/webgpu/dist" -mindepth 1 -maxdepth 1 ! -name linux-x64 -exec rm -rf {} +
mv "$nm" "$stage/kiln/node_modules" && rm -rf "$stage/kiln/rt"

# kiln after (this checkout's build, unpacked at the repository root) and before (BASE, built in a worktree, under
# before/), sharing node_modules. The tracked files (bench/) reach the machine with the working tree.
(cd "$root" && npx tsc -p tsconfig.json)
cp -r "$root/dist" "$stage/kiln/dist"
# The native module (thread pool, step sampler), compiled here: the GPU machine has no compiler or Node headers.
(cd "$root" && node scripts/build-native.js)
if [ -d "$root/build" ]; then cp -r "$root/build" "$stage/kiln/build"; fi
wt="$stage/worktree"; git -C "$root" worktree add -q --detach "$wt" "$base"
ln -s "$root/node_modules" "$wt/node_modules"
(cd "$wt" && npx tsc -p tsconfig.json && node scripts/build-native.js)
mkdir -p "$stage/kiln/before" && cp -r "$wt/bin" "$wt/dist" "$wt/package.json" "$stage/kiln/before/"
if [ -d "$wt/build" ]; then cp -r "$wt/build" "$stage/kiln/before/build"; fi
git -C "$root" worktree remove --force "$wt"
ln -s ../node_modules "$stage/kiln/before/node_modules"
tar -C "$stage/kiln" -cJf "$out/kiln.tar.xz" .

# llama-server from the same release, with its own libraries (its CPU and Vulkan backends come from node-llama-cpp).
lbin="${LLAMA_BIN:-$HOME/.cache/kiln-bench/llama.cpp-dl/build/bin}"
mkdir -p "$stage/llama"; cp -a "$lbin/llama-server" "$lbin"/lib*.so* "$stage/llama/"
rm -f "$stage"/llama/libggml-cpu*.so "$stage"/llama/libllama-bench-impl.so
tar -C "$stage" -cJf "$out/llama.tar.xz" llama

# The Vulkan loader and the GL dispatch libraries the NVIDIA Vulkan driver loads (without libglvnd's, its ICD does
# not load and node-llama-cpp falls back to the CPU: the first run of this script did).
mkdir -p "$stage/debs" && (cd "$stage/debs" && apt-get download -q libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null)
tar -C "$stage" -cJf "$out/debs.tar.xz" debs

# The model's header (metadata, tokenizer, tensor infos): bench/gpu/gen-gguf.mjs writes random weights behind it.
model="${MODEL_PATH:-$HOME/.kiln/models/qwen2.5-coder-1.5b.gguf}"
bytes="$(cd "$root" && node -e 'import("./dist/gguf/read-gguf-header.js").then(async (m) => console.log((await m.readGgufHeader(process.argv[1])).dataOffset))' "$model")"
head -c "$bytes" "$model" | xz -T0 > "$out/header.xz"
ls -la "$out"; du -ch "$out"/* | tail -1
