#!/usr/bin/env bash
# Mesa's Vulkan software renderer (lavapipe) from Debian bookworm-backports, unpacked under .cache/lavapipe for the
# tests of the WebGPU kernels' subgroup variants (src/engine/backends/webgpu/kernels/gpu-test-kit.fixture.ts). Debian
# 12's own Mesa (22.3) lavapipe lacks what Dawn requires of a Vulkan device; 25.0 offers subgroups (and shader-f16).
# Nothing is installed system-wide (the backports source is added to apt's lists; apt never installs from it unasked):
# the tests point the Vulkan loader (libvulkan1) at the unpacked driver. Needs apt
# and a reachable Debian mirror; a second run finds the driver there and does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="$PWD/.cache/lavapipe"
[[ -f "$dest/lvp_icd.json" ]] && exit 0
list=/etc/apt/sources.list.d/kiln-bookworm-backports.list
if ! apt-cache policy mesa-vulkan-drivers 2>/dev/null | grep -q bpo12; then
  echo "deb http://deb.debian.org/debian bookworm-backports main" > "$list"
  apt-get update -qq -o Dir::Etc::sourcelist="$list" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0 >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download -qq mesa-vulkan-drivers/bookworm-backports 2>/dev/null)
dpkg-deb -x "$work"/mesa-vulkan-drivers_*.deb "$work/root"
mkdir -p "$dest"
cp "$work/root/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so" "$dest/"
printf '{ "file_format_version": "1.0.0", "ICD": { "library_path": "%s/libvulkan_lvp.so", "api_version": "1.4.305" } }\n' "$dest" > "$dest/lvp_icd.json"
