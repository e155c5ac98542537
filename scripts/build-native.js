#!/usr/bin/env node
// Compiles native/threadpool.c into build/threadpool.node: a persistent CPU thread pool for llama.cpp contexts
// (see the file's comment). Optional: without a C compiler or Node's headers kiln still works, and decodes small
// steps on one thread instead (src/engine/backends/llama-cpp/decode-threads.ts). Never fails the build.
// Also the package's install script (npm install, npx): it needs only Node itself, never a devDependency, and
// never fails the install.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const source = join(root, "native", "threadpool.c");
const output = join(root, "build", "threadpool.node");
const headers = [join(dirname(process.execPath), "..", "include", "node"), process.env.KILN_NODE_HEADERS].filter(Boolean)
  .find((dir) => existsSync(join(dir, "node_api.h")));
const compiler = process.env.CC ?? "cc";

if (process.platform !== "linux") {
  process.exit(0);
} else if (!headers) {
  console.warn("kiln: Node's C headers (include/node/node_api.h) not found; the llama.cpp thread pool is not built");
} else {
  try {
    mkdirSync(dirname(output), { recursive: true });
    execFileSync(compiler, ["-O2", "-Wall", "-shared", "-fPIC", "-DNODE_GYP_MODULE_NAME=kiln_threadpool", `-I${headers}`,
      source, "-o", output, "-ldl"], { stdio: ["ignore", "inherit", "inherit"] });
  } catch (error) {
    console.warn(`kiln: could not compile ${source} (${error.message.split("\n")[0]}); the llama.cpp thread pool is not built`);
  }
}
