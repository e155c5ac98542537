#!/usr/bin/env bash
# The published package end to end, as a user without a clone gets it: packs kiln as `npm publish` would (prepack
# builds dist/), checks what the tarball holds, installs it into an empty folder and runs `npx <package>` there:
# --version, `run` on the default model, and `serve` answering one Anthropic and one OpenAI request.
# Uses $KILN_HOME's store (the default model must be in it: `npm run setup` pulls it). The dependencies come through
# npm's usual cache (node-llama-cpp's prebuilt binaries alone are ~700 MB); the package itself is the fresh pack.
set -euo pipefail
cd "$(dirname "$0")/.."

name=$(node -p 'require("./package.json").name')
version=$(node -p 'require("./package.json").version')
tmp=$(mktemp -d)
server=""
cleanup() {
  if [[ -n "$server" ]] && kill -0 -- "-$server" 2>/dev/null; then kill -KILL -- "-$server" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "smoke-npx: $*" >&2
  exit 1
}

# 1. The tarball: dist/ and the native module's source, no tests, benchmarks, fixtures, sources or source maps.
npm pack --pack-destination "$tmp" --loglevel=warn >/dev/null
tarball="$tmp/$name-$version.tgz"
[[ -f "$tarball" ]] || fail "npm pack made no $tarball"
listing=$(tar tzf "$tarball")
for file in package/package.json package/bin/kiln.js package/dist/cli/main.js package/native/addon.c package/native/llama-context.h package/native/llama-context.c package/native/threadpool.c package/native/step-sampler.c package/scripts/build-native.js package/README.md package/LICENSE; do
  grep -qxF "$file" <<<"$listing" || fail "the tarball lacks $file"
done
if unwanted=$(grep -E '(^|/)(test|tests|__tests__|bench|fixtures)/|\.(test|fixture)\.[cm]?[jt]sx?$|\.map$|^package/(src|build|node_modules)/' <<<"$listing"); then
  fail "the tarball holds files a user does not need:"$'\n'"$unwanted"
fi
echo "smoke-npx: $(basename "$tarball"): $(wc -l <<<"$listing") files, $(du -k "$tarball" | cut -f1) KiB"

# 2. Install it into an empty folder, as `npx` would, and run it from there (--yes=false: never from the registry).
app="$tmp/app"
mkdir "$app"
npm install --prefix "$app" --no-audit --no-fund --prefer-offline --loglevel=error "$tarball" >/dev/null
kiln() { (cd "$app" && npx --yes=false "$name" "$@"); }
if [[ -f build/kiln-native.node && ! -f "$app/node_modules/$name/build/kiln-native.node" ]]; then
  fail "the install script did not build the native module, though this machine can (npm run build did)"
fi

got=$(kiln --version)
[[ "$got" == "$version" ]] || fail "npx $name --version printed '$got', not $version"
echo "smoke-npx: npx $name --version: $got"

text=$(kiln run --max-tokens 24 --seed 1 "Write a haiku about kilns" </dev/null)
[[ -n "${text//[[:space:]]/}" ]] || fail "npx $name run printed nothing"
echo "smoke-npx: npx $name run: $(head -c 80 <<<"$text" | tr '\n' ' ')"

# 3. serve on a free loopback port, with a key; its own process group, so one signal reaches npx and kiln alike.
key="smoke-$RANDOM$RANDOM"
setsid bash -c 'cd "$1" && shift && exec npx --yes=false "$@"' smoke "$app" "$name" serve --host 127.0.0.1 --port 0 \
  --api-key "$key" --cache-disk 0 </dev/null >"$tmp/serve.log" 2>&1 &
server=$!
url=""
for _ in $(seq 240); do
  url=$(sed -n 's/^Anthropic base URL: *\([^ ]*\).*/\1/p' "$tmp/serve.log")
  [[ -n "$url" ]] && break
  kill -0 "$server" 2>/dev/null || { cat "$tmp/serve.log" >&2; fail "npx $name serve exited before it was ready"; }
  sleep 0.5
done
[[ -n "$url" ]] || { cat "$tmp/serve.log" >&2; fail "npx $name serve was not ready after 120 s"; }
echo "smoke-npx: npx $name serve: $url"

# POSTs the body $2 to $1 with the auth header $3; prints the start of the reply's text, and fails on anything else.
ask() {
  local status
  status=$(curl -sS -m 120 -o "$tmp/body.json" -w '%{http_code}' "$url$1" -H "$3" -H "anthropic-version: 2023-06-01" \
    -H "content-type: application/json" -d "$2") || fail "POST $1: curl failed"
  [[ "$status" == 200 ]] || fail "POST $1: HTTP $status: $(cat "$tmp/body.json")"
  node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const text = r.type === "message" ? r.content?.find((b) => b.type === "text")?.text : r.choices?.[0]?.message?.content;
    if (typeof text !== "string" || !text.trim()) { console.error(JSON.stringify(r)); process.exit(1); }
    console.log(text.replace(/\s+/g, " ").trim().slice(0, 80));' "$tmp/body.json" || fail "POST $1: no text in the response"
}
body='{"model":"smollm2-135m","max_tokens":24,"messages":[{"role":"user","content":"Say hello"}]}'
reply=$(ask /v1/messages "$body" "x-api-key: $key")
echo "smoke-npx: POST /v1/messages: $reply"
reply=$(ask /v1/chat/completions "$body" "Authorization: Bearer $key")
echo "smoke-npx: POST /v1/chat/completions: $reply"

kill -TERM -- "-$server"
for _ in $(seq 60); do
  kill -0 -- "-$server" 2>/dev/null || break
  sleep 0.5
done
kill -0 -- "-$server" 2>/dev/null && { cat "$tmp/serve.log" >&2; fail "npx $name serve did not stop within 30 s of SIGTERM"; }
server=""
echo "smoke-npx: ok"
