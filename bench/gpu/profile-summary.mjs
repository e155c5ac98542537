// Summarises a V8 CPU profile (node --cpu-prof) as text: milliseconds of self time by function and by package or
// kiln folder, the busiest first. Usage: node bench/gpu/profile-summary.mjs <file.cpuprofile> [rows, default 40].
import { readFileSync } from "node:fs";

const profile = JSON.parse(readFileSync(process.argv[2], "utf8"));
const rows = Number(process.argv[3] ?? 40);
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const byFunction = new Map();
const byPlace = new Map();
const add = (map, key, us) => map.set(key, (map.get(key) ?? 0) + us);
let total = 0;
profile.samples.forEach((id, i) => {
  const { functionName, url, lineNumber } = nodes.get(id).callFrame;
  const us = profile.timeDeltas[i] ?? 0;
  total += us;
  add(byFunction, `${functionName || "(anonymous)"} ${url.split("/").slice(-2).join("/")}:${lineNumber}`, us);
  const pkg = url.match(/node_modules\/((@[^/]+\/)?[^/]+)/)?.[1];
  add(byPlace, pkg ?? (url.includes("/dist/") ? `kiln ${url.split("/dist/")[1].split("/").slice(0, -1).join("/")}` : functionName || url || "(native)"), us);
});
const print = (title, map) => {
  console.log(`## ${title}`);
  for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, rows)) console.log(`${(us / 1000).toFixed(1).padStart(10)} ms  ${key}`);
};
console.log(`# ${process.argv[2].split("/").at(-1)}: ${(total / 1e6).toFixed(1)} s sampled`);
print("by package or kiln folder", byPlace);
print("by function", byFunction);
