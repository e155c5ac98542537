/**
 * Child servers (kiln, llama-server): start on 127.0.0.1, wait until ready, and always stop them — on normal exit,
 * on an error, and on SIGINT/SIGTERM — so a benchmark never leaves a server running.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";

const live = new Set();

function killAll() {
  for (const child of live) {
    try {
      child.kill("SIGKILL");
    } catch {
      /* already gone */
    }
  }
  live.clear();
}

process.on("exit", killAll);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    killAll();
    process.exit(130);
  });
}

/** A free TCP port on 127.0.0.1 (the OS picks it; there is a small race until the server binds it). */
export async function findFreePort() {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
  server.close();
  await once(server, "close");
  return port;
}

/**
 * Starts a server process and resolves once `GET readyPath` answers 200 (bounded by timeoutMs).
 * Keeps the last 64 KiB of its output for diagnostics and variant detection.
 */
export async function startServer({ name, command, args, env, port, readyPath, timeoutMs = 120_000 }) {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  live.add(child);
  let log = "";
  const keep = (chunk) => {
    log = (log + chunk.toString()).slice(-65536);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  let exited = false;
  let stopping = false;
  child.on("exit", (code, signal) => {
    exited = true;
    live.delete(child);
    // A server that dies mid-run fails the next request with a bare "fetch failed": say why here.
    if (!stopping) console.error(`[bench] ${name} exited (code ${code}, signal ${signal}); its last output:\n${log.slice(-2000)}`);
  });
  const handle = {
    name,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    pid: child.pid,
    log: () => log,
    stop: async () => {
      if (exited) return;
      stopping = true;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await once(child, "exit").catch(() => {});
      clearTimeout(timer);
    },
  };
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${name} exited during start-up:\n${log.slice(-4000)}`);
    try {
      const res = await fetch(`${handle.baseUrl}${readyPath}`, { signal: AbortSignal.timeout(2000) });
      await res.body?.cancel();
      if (res.ok) return handle;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await handle.stop();
  throw new Error(`${name} did not become ready within ${timeoutMs} ms:\n${log.slice(-4000)}`);
}

/** The ggml CPU variant a process loaded, read from its memory map (Linux), e.g. "cascadelake". */
export async function readLoadedCpuVariant(pid) {
  const { readFile } = await import("node:fs/promises");
  try {
    const maps = await readFile(`/proc/${pid}/maps`, "utf8");
    const variants = new Set([...maps.matchAll(/libggml-cpu-([\w.-]+?)\.so/g)].map((m) => m[1]));
    return [...variants].join("+") || undefined;
  } catch {
    return undefined;
  }
}
