#!/usr/bin/env node
// Enforces the dependency rules of the architecture so the tree cannot drift:
// engine never imports server/chat/cli; only engine/backends/<x>/ (and engine/text/) import node-llama-cpp;
// backends never import each other; the two protocol folders never import each other, nor do the OpenAI APIs
// (chat/, completions/, responses/: what they share lives in openai/wire/, which imports none of them); chat/
// reaches servers through the engine (its remote backend), never through server/ code; lib/ knows no domain; only
// routes.ts and app.ts import h3.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";

const root = new URL("../src/", import.meta.url).pathname;
const rules = [
  { from: "engine/", banned: /from "\.\.?\/(?:\.\.\/)*(server|chat|cli)\//, why: "engine must not import server/, chat/ or cli/" },
  { from: "server/anthropic/", banned: /from "(\.\.\/)+openai\//, why: "protocol folders must not import each other" },
  { from: "server/openai/", banned: /from "(\.\.\/)+anthropic\//, why: "protocol folders must not import each other" },
  { from: "engine/backends/", banned: /from "(\.\.\/)+(llama-cpp|webgpu|remote|scripted)\//, why: "backends must not import each other" },
  ...["chat", "completions", "responses", "wire"].map((api) => ({
    from: `server/openai/${api}/`,
    banned: new RegExp(`from "\\.\\./(${["chat", "completions", "responses"].filter((other) => other !== api).join("|")})/`),
    why: "the OpenAI API folders must not import each other (shared pieces belong in openai/wire/)",
  })),
  { from: "chat/", banned: /from "\.\.\/(\.\.\/)*server\//, why: "chat/ must not import server/ (talk to servers through the engine)" },
  { from: "lib/", banned: /from "\.\.\//, why: "lib/ must not import the rest of kiln" },
];
const packageRules = [
  { pkg: "node-llama-cpp", allowed: (file) => file.startsWith("engine/backends/llama-cpp/") || file.startsWith("engine/text/") || file.endsWith(".test.ts") },
  { pkg: "h3", allowed: (file) => /(^|\/)(routes|app)\.ts$/.test(file) || file.endsWith(".test.ts") },
];

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

const problems = [];
for (const path of walk(root)) {
  const file = relative(root, path).split(sep).join("/");
  const source = readFileSync(path, "utf8");
  for (const rule of rules) {
    if (file.startsWith(rule.from) && rule.banned.test(source)) problems.push(`${file}: ${rule.why}`);
  }
  for (const rule of packageRules) {
    const imports = new RegExp(`from "${rule.pkg}(/[^"]*)?"|import\\("${rule.pkg}(/[^"]*)?"\\)`).test(source);
    if (imports && !rule.allowed(file)) problems.push(`${file}: only allowed places may import ${rule.pkg}`);
  }
}
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log("layers ok");
