#!/usr/bin/env node
// Enforces the dependency rules of the architecture so the tree cannot drift:
// - engine never imports server/chat/cli; outside src/engine, code reaches the engine only through
//   src/engine/index.ts (tests may also open engine/backends/ and engine/text/ to test them white-box);
// - inside the engine only backend-registry.ts imports a backend, and only its entry `<name>/<name>-backend.ts`;
//   every backend folder is registered there; backends never import each other;
// - only engine/backends/<x>/ (and engine/text/) import node-llama-cpp; only routes.ts and app.ts import h3 (and app.ts srvx, h3's Node layer);
// - the two protocol folders never import each other, nor do the OpenAI APIs (chat/, completions/, embeddings/,
//   responses/: what they share lives in openai/wire/, which imports none of them); chat/ reaches servers through the
//   engine;
// - lib/, errors/ and gguf/ know no domain: they import nothing else of kiln;
// - the top-level folders of src/ import each other without a cycle (engine ↔ models, server ↔ team, …).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

const repo = new URL("../", import.meta.url).pathname;
const src = join(repo, "src");
const engine = join(src, "engine");

const rules = [
  { from: "engine/", banned: /^(server|chat|cli)\//, why: "engine must not import server/, chat/ or cli/" },
  { from: "server/anthropic/", banned: /^server\/openai\//, why: "protocol folders must not import each other" },
  { from: "server/openai/", banned: /^server\/anthropic\//, why: "protocol folders must not import each other" },
  ...["chat", "completions", "embeddings", "responses", "wire"].map((api) => ({
    from: `server/openai/${api}/`,
    banned: new RegExp(`^server/openai/(${["chat", "completions", "embeddings", "responses"].filter((other) => other !== api).join("|")})/`),
    why: "the OpenAI API folders must not import each other (shared pieces belong in openai/wire/)",
  })),
  { from: "chat/", banned: /^server\//, why: "chat/ must not import server/ (talk to servers through the engine)" },
  ...["lib", "errors", "gguf"].map((leaf) => ({ from: `${leaf}/`, banned: new RegExp(`^(?!${leaf}/)[^.]`), why: `${leaf}/ must not import the rest of kiln` })),
];
const packageRules = [
  { pkg: "node-llama-cpp", allowed: (file) => file.startsWith("engine/backends/llama-cpp/") || file.startsWith("engine/text/") || file.endsWith(".test.ts") },
  { pkg: "h3", allowed: (file) => /(^|\/)(routes|app)\.ts$/.test(file) || file.endsWith(".test.ts") },
  { pkg: "srvx", allowed: (file) => file === "server/app.ts" },
];

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

/** Relative imports of a file (static, dynamic and `import("…")` types), resolved to paths under the repo. */
function importsOf(path, source) {
  return [...source.matchAll(/(?:from |import\(|import )"(\.\.?\/[^"]+)"/g)].map((match) => resolve(dirname(path), match[1]));
}

const slash = (path) => path.split(sep).join("/");
const problems = [];
const folderEdges = new Map();

for (const path of walk(src)) {
  const file = slash(relative(src, path));
  const source = readFileSync(path, "utf8");
  const targets = importsOf(path, source).map((target) => slash(relative(src, target)));
  for (const rule of rules) {
    const hit = file.startsWith(rule.from) && targets.find((target) => rule.banned.test(target));
    if (hit) problems.push(`${file}: ${rule.why} (${hit})`);
  }
  for (const rule of packageRules) {
    const imports = new RegExp(`from "${rule.pkg}(/[^"]*)?"|import\\("${rule.pkg}(/[^"]*)?"\\)`).test(source);
    if (imports && !rule.allowed(file)) problems.push(`${file}: only allowed places may import ${rule.pkg}`);
  }
  checkEngineImports(file, targets, false);
  const top = file.split("/")[0];
  for (const target of targets) {
    const other = target.split("/")[0];
    if (other !== top && !other.startsWith("..") && target.includes("/")) addEdge(top, other, file);
  }
}
for (const path of walk(join(repo, "test"))) {
  const targets = importsOf(path, readFileSync(path, "utf8")).map((target) => slash(relative(src, target)));
  checkEngineImports(slash(relative(repo, path)), targets, true);
}
checkRegistry();
checkFolderCycles();

/** Who may import what of the engine: its index from outside, a backend only through the registry inside. */
function checkEngineImports(file, targets, isTest) {
  const inEngine = file.startsWith("engine/");
  for (const target of targets.filter((t) => t.startsWith("engine/"))) {
    const inner = target.slice("engine/".length);
    if (!inEngine) {
      const whiteBox = (isTest || /\.test\.tsx?$/.test(file)) && /^(backends|text)\//.test(inner);
      if (inner !== "index.js" && !whiteBox) problems.push(`${file}: import the engine through engine/index.ts, not ${target}`);
      continue;
    }
    const backend = /^backends\/([^/]+)\//.exec(inner)?.[1];
    const own = /^engine\/backends\/([^/]+)\//.exec(file)?.[1];
    if (own && backend && backend !== own) problems.push(`${file}: backends must not import each other (${target})`);
    if (!own && backend && file !== "engine/backend-registry.ts" && !/\.test\.tsx?$/.test(file)) {
      problems.push(`${file}: only engine/backend-registry.ts imports a backend (${target})`);
    }
    if (file === "engine/backend-registry.ts" && backend && inner !== `backends/${backend}/${backend}-backend.js`) {
      problems.push(`${file}: register a backend by its entry backends/${backend}/${backend}-backend.ts, not ${target}`);
    }
  }
}

/** Every folder under engine/backends/ has an entry `<name>-backend.ts` that the registry imports. */
function checkRegistry() {
  const registry = readFileSync(join(engine, "backend-registry.ts"), "utf8");
  for (const name of readdirSync(join(engine, "backends"))) {
    const entry = `backends/${name}/${name}-backend`;
    if (!existsSync(join(engine, `${entry}.ts`))) problems.push(`engine/backends/${name}: a backend needs its entry ${entry}.ts`);
    else if (!registry.includes(`"./${entry}.js"`)) problems.push(`engine/backends/${name}: not registered in engine/backend-registry.ts`);
  }
}

function addEdge(from, to, file) {
  if (!folderEdges.has(from)) folderEdges.set(from, new Map());
  if (!folderEdges.get(from).has(to)) folderEdges.get(from).set(to, file);
}

/** A depth-first search over the folder graph; each cycle is named with one file per edge. */
function checkFolderCycles() {
  const state = new Map();
  const visit = (folder, path) => {
    state.set(folder, "open");
    for (const [next, file] of folderEdges.get(folder) ?? []) {
      if (state.get(next) === "open") {
        const cycle = [...path.slice(path.findIndex((step) => step.folder === next)), { folder, file }];
        problems.push(`folder cycle: ${cycle.map((step) => `${step.folder} (${step.file})`).join(" → ")} → ${next}`);
      } else if (!state.has(next)) visit(next, [...path, { folder, file }]);
    }
    state.set(folder, "done");
  };
  for (const folder of folderEdges.keys()) if (!state.has(folder)) visit(folder, []);
}

if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log("layers ok");
