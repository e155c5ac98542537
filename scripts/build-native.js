#!/usr/bin/env node
// Compiles native/*.c into build/kiln-native.node: a persistent CPU thread pool for llama.cpp contexts and one-call
// sampling of a decode step's sequences (see the files' comments). Optional: without a C compiler or Node's headers
// kiln still works, decodes small steps on one thread instead (src/engine/backends/llama-cpp/decode-threads.ts) and
// samples each sequence through node-llama-cpp. Never fails the build.
// Also the package's install script (npm install, npx): it needs only Node itself, never a devDependency, and
// never fails the install.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const native = join(root, "native");
const sources = readdirSync(native).filter((file) => file.endsWith(".c")).sort().map((file) => join(native, file));
const output = join(root, "build", "kiln-native.node");
const headers = [join(dirname(process.execPath), "..", "include", "node"), process.env.KILN_NODE_HEADERS].filter(Boolean)
  .find((dir) => existsSync(join(dir, "node_api.h")));
const compiler = process.env.CC ?? "cc";

if (process.platform !== "linux") {
  process.exit(0);
} else if (!headers) {
  console.warn("kiln: Node's C headers (include/node/node_api.h) not found; the native module is not built");
} else {
  try {
    mkdirSync(dirname(output), { recursive: true });
    execFileSync(compiler, ["-O2", "-Wall", "-shared", "-fPIC", "-DNODE_GYP_MODULE_NAME=kiln_native", `-I${headers}`,
      ...sources, "-o", output, "-ldl", "-lpthread"], { stdio: ["ignore", "inherit", "inherit"] });
  } catch (error) {
    console.warn(`kiln: could not compile ${native} (${error.message.split("\n")[0]}); the native module is not built`);
  }
}
