/**
 * The kiln server an agent talks to: one already running on the address (checked to be kiln, healthy, and serving
 * the model), or one started in the background that keeps running after the agent exits, so the next launch finds
 * the agent's prompt already in its prefix cache. Its pid and log live in `<KILN_HOME>/launch/`.
 */
import { spawn } from "node:child_process";
import { mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { isProcessAlive } from "../lib/process-alive.js";

/** A model as a running kiln lists it (GET /v1/models). */
export interface ServedModel {
  id: string;
  context_length?: number;
}

/** What probing an address found. */
export type ServerProbe =
  | { kind: "none" }
  | { kind: "other"; detail: string }
  | { kind: "kiln"; status: "ok" | "loading" | "error"; message?: string };

/** The files of the background server. */
export function launchPaths(home: string) {
  const dir = join(home, "launch");
  return { dir, pid: join(dir, "serve.pid"), log: join(dir, "serve.log") };
}

/** Asks `url` whether it is kiln (GET / answers "kiln is running") and how its models are (GET /health). */
export async function probeServer(url: string): Promise<ServerProbe> {
  let root: Response;
  try {
    root = await fetch(`${url}/`, { signal: AbortSignal.timeout(5000) });
  } catch {
    return { kind: "none" };
  }
  const text = await root.text().catch(() => "");
  if (!text.startsWith("kiln")) return { kind: "other", detail: `HTTP ${root.status}` };
  const health = (await fetch(`${url}/health`).then((r) => r.json()).catch(() => ({}))) as { status?: string; message?: string };
  const status = health.status === "ok" || health.status === "loading" ? health.status : "error";
  return { kind: "kiln", status, message: health.message };
}

/** Options of {@link startBackgroundServer}. */
export interface StartOptions {
  home: string;
  host: string;
  port: number;
  /** `--model` value: `<name>=<path>`. */
  model: string;
  contextSize: number;
}

/**
 * Starts `kiln serve` detached (it outlives this process), logging to `<home>/launch/serve.log`; resolves with its
 * pid once /health answers ok, rejects with the log's tail if it exits first.
 */
export async function startBackgroundServer(options: StartOptions, url: string): Promise<number> {
  const paths = launchPaths(options.home);
  mkdirSync(paths.dir, { recursive: true });
  const log = openSync(paths.log, "a");
  // Parallel 2: the agents' small side requests (titles, summaries) take the second sequence instead of evicting
  // the main conversation's cached prefix. Loopback only and no keys, like a local Ollama.
  const args = [process.argv[1]!, "serve", "--host", options.host, "--port", String(options.port), "--model", options.model,
    "--ctx-size", String(options.contextSize), "--parallel", "2", "--no-auth"];
  const child = spawn(process.execPath, args, { detached: true, stdio: ["ignore", log, log], env: { ...process.env, KILN_HOME: options.home } });
  child.unref();
  const pid = child.pid!;
  writeFileSync(paths.pid, `${pid}\n`);
  let exited: number | null | undefined;
  child.once("exit", (code) => { exited = code; });
  for (;;) {
    if (exited !== undefined) {
      rmSync(paths.pid, { force: true });
      throw new Error(`kiln serve exited (code ${exited}) before it was ready: ${tailOf(paths.log)}`);
    }
    const probe = await probeServer(url);
    if (probe.kind === "kiln" && probe.status === "ok") return pid;
    if (probe.kind === "kiln" && probe.status === "error") throw new Error(`kiln serve failed to load the model: ${probe.message ?? "see the log"} (log: ${paths.log})`);
    await delay(500);
  }
}

/** Stops the background server (SIGTERM, then waits for it to exit); its pid, or undefined when none runs. */
export async function stopBackgroundServer(home: string): Promise<number | undefined> {
  const pid = backgroundServerPid(home);
  rmSync(launchPaths(home).pid, { force: true });
  if (!pid) return undefined;
  process.kill(pid, "SIGTERM");
  for (let waited = 0; isProcessAlive(pid) && waited < 60_000; waited += 200) await delay(200);
  return pid;
}

/** The background server's pid, when one is recorded and alive. */
export function backgroundServerPid(home: string): number | undefined {
  try {
    const pid = Number(readFileSync(launchPaths(home).pid, "utf8").trim());
    return pid && isProcessAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

function tailOf(path: string): string {
  const lines = readFileSync(path, "utf8").trim().split("\n");
  return lines.slice(-3).join(" | ");
}
