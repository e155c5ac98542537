/**
 * Remembered binary checks. On Linux node-llama-cpp tests every prebuilt llama.cpp binary in a child process before
 * it loads it (a Node process that loads the binary, its backends and llama.cpp: ~0.35–0.4 s on 2 cores), so that a
 * binary that would crash the process (an instruction the CPU lacks, a C library too old) is passed over instead. It
 * does so at every start: a quarter of a one-token `kiln run` on 2 cores. kiln keeps a record of the CPU binaries
 * that passed, keyed by everything that decides the answer (the binary file, Node's version and ABI, the kernel, the
 * C library in use, the CPU's model and flags), and answers the test from it; a binary not in the record is tested as
 * before, and recorded once it passes. GPU binaries are always tested: their test also checks a driver, which can
 * change under kiln. The llama.cpp backend opens its binary this way, and so do the vocabularies of the other local
 * backends and the prompt threads (their workers open node-llama-cpp's CPU binary too, and a server's start waits
 * for the first of them).
 *
 * node-llama-cpp has no option to skip its test, so its test process is what is stood in for: while kiln opens
 * llama.cpp, `child_process.fork` of node-llama-cpp's test module returns a stand-in that speaks the test's messages
 * (ready; start → loaded; test → done; exit) from the record, or forks the real test and relays it.
 */
import childProcess, { type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { EventEmitter } from "node:events";
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { release } from "node:os";
import { dirname, join } from "node:path";

/** node-llama-cpp's test module, which it forks as the test process. */
const TEST_MODULE = /[\\/]testBindingBinary\.js$/;
/** The record's file in the cache folder. */
const RECORD_FILE = "llama-binaries.json";
/** Binaries remembered at most (a few node-llama-cpp versions, a home shared by a few machines). */
const MAX_RECORDED = 16;

/** A message of node-llama-cpp's binary test, either way. */
interface TestMessage {
  type: string;
  bindingBinaryPath?: string;
  extBackendsPath?: string;
  gpu?: unknown;
}

let opening = 0;
/** `child_process.fork` as it was before kiln stood in for the test process. */
let realFork: typeof childProcess.fork | undefined;

/**
 * Runs `open` (which opens llama.cpp through node-llama-cpp) with the binary tests answered from the record kept in
 * `cacheDir` (RECORD_FILE) where they can be; without a folder, or off Linux, `open` runs as it is.
 */
export async function withRememberedBinaryChecks<T>(cacheDir: string | undefined, open: () => Promise<T>): Promise<T> {
  if (!cacheDir || process.platform !== "linux") return open();
  if (opening++ === 0) {
    const record = new BinaryCheckRecord(join(cacheDir, RECORD_FILE));
    const fork = realFork = childProcess.fork;
    childProcess.fork = function standInForTests(this: unknown, ...args: Parameters<typeof fork>) {
      const forkReal = () => fork.apply(this, args) as ChildProcess;
      return TEST_MODULE.test(String(args[0])) ? new TestStandIn(record, forkReal) as unknown as ChildProcess : forkReal();
    } as typeof fork;
    syncBuiltinESMExports();
  }
  try {
    return await open();
  } finally {
    if (--opening === 0 && realFork) {
      childProcess.fork = realFork;
      syncBuiltinESMExports();
    }
  }
}

/** The test process as node-llama-cpp drives it: answered from the record, or the real one relayed. */
class TestStandIn extends EventEmitter {
  killed = false;
  exitCode: number | null = null;
  private real: ChildProcess | undefined;
  private remembered = false;

  constructor(private readonly record: BinaryCheckRecord, private readonly forkReal: () => ChildProcess) {
    super();
    // After node-llama-cpp has attached its listeners (it does so right after fork returns).
    queueMicrotask(() => this.emit("message", { type: "ready" }));
  }

  send(message: TestMessage): boolean {
    if (this.real) return this.real.send(message);
    if (message.type === "start") {
      const key = binaryKey(message);
      if (key !== undefined && this.record.has(key)) {
        this.remembered = true;
        this.reply({ type: "loaded" });
      } else {
        this.relay(message, key);
      }
    } else if (this.remembered && message.type === "test") {
      this.reply({ type: "done" });
    } else if (message.type === "exit") {
      this.exited(0, null);
    }
    return true;
  }

  kill(signal?: NodeJS.Signals): boolean {
    if (this.real) return this.real.kill(signal);
    if (this.exitCode === null && !this.killed) {
      this.killed = true;
      queueMicrotask(() => this.emit("exit", null, signal ?? "SIGTERM"));
    }
    return true;
  }

  private reply(message: TestMessage): void {
    queueMicrotask(() => this.emit("message", message));
  }

  private exited(code: number, signal: NodeJS.Signals | null): void {
    this.exitCode = code;
    queueMicrotask(() => this.emit("exit", code, signal));
  }

  /** Forks the real test, starts it as node-llama-cpp asked, relays its answers, and records a binary that passes. */
  private relay(start: TestMessage, key: string | undefined): void {
    const real = this.real = this.forkReal();
    let passed = false;
    real.on("message", (message: TestMessage) => {
      if (message.type === "ready") return void real.send(start);
      if (message.type === "done") passed = true;
      this.emit("message", message);
    });
    real.on("error", (error) => this.emit("error", error));
    real.on("exit", (code, signal) => {
      this.exitCode = code;
      if (code === 0 && passed && key !== undefined) this.record.add(key);
      this.emit("exit", code, signal);
    });
  }
}

/** What decides whether a CPU binary runs here; undefined for a GPU binary, or when a part cannot be read. */
function binaryKey(message: TestMessage): string | undefined {
  if (message.gpu !== false || typeof message.bindingBinaryPath !== "string") return undefined;
  try {
    const binary = statSync(message.bindingBinaryPath);
    const parts = [message.bindingBinaryPath, binary.size, binary.mtimeMs, message.extBackendsPath ?? null, process.execPath,
      process.versions.node, process.versions.modules, process.arch, release(), cLibrary(), cpuIdentity()];
    return createHash("sha256").update(JSON.stringify(parts)).digest("hex");
  } catch {
    return undefined;
  }
}

/** The C library this process runs on: its file as mapped, with its size and modification time. */
function cLibrary(): string {
  const line = readFileSync("/proc/self/maps", "utf8").split("\n").find((entry) => /\/libc[.-][^/]*$/.test(entry));
  const path = line?.slice(line.indexOf("/"));
  if (!path) return "unknown";
  const file = statSync(path);
  return `${path} ${file.size} ${file.mtimeMs}`;
}

/** The first processor's model and instruction-set flags (a binary's CPU variant needs them). */
function cpuIdentity(): string {
  const first = readFileSync("/proc/cpuinfo", "utf8").split("\n\n")[0] ?? "";
  return first.split("\n").filter((line) => /^(vendor_id|model name|flags|Features|CPU implementer|CPU part)\s*:/.test(line)).join("\n");
}

/** The keys of the binaries that passed, in a small JSON file; unreadable or unwritable, it remembers nothing. */
class BinaryCheckRecord {
  private readonly keys: string[];

  constructor(private readonly file: string) {
    this.keys = readKeys(file);
  }

  has(key: string): boolean {
    return this.keys.includes(key);
  }

  add(key: string): void {
    if (this.has(key)) return;
    this.keys.push(key);
    this.keys.splice(0, Math.max(0, this.keys.length - MAX_RECORDED));
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      const partial = `${this.file}.${process.pid}.tmp`;
      writeFileSync(partial, `${JSON.stringify({ passed: this.keys }, null, 1)}\n`);
      renameSync(partial, this.file);
    } catch {
      // A read-only home: every start tests the binary, as without a record.
    }
  }
}

function readKeys(file: string): string[] {
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as { passed?: unknown };
    return Array.isArray(parsed.passed) ? parsed.passed.filter((key): key is string => typeof key === "string") : [];
  } catch {
    return [];
  }
}
