/** Where a benchmark entry leaves its run: `<dir>/<date>-<host>-<kind>[-BENCH_TAG].json` and the `.md` report beside it. */
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";

/** Adds the load average at the end (the measure of how busy the machine was) and writes both files. */
export function writeResults(dir, kind, result, render, log) {
  result.loadAverageAtEnd = loadavg().map((v) => Math.round(v * 100) / 100);
  mkdirSync(dir, { recursive: true });
  const tag = process.env.BENCH_TAG ? `-${process.env.BENCH_TAG.replace(/[^\w.-]/g, "")}` : "";
  const base = join(dir, `${result.date.slice(0, 10)}-${result.machine.host}-${kind}${tag}`);
  writeFileSync(`${base}.json`, `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(`${base}.md`, render(result));
  log(`wrote ${base}.json and .md`);
}
