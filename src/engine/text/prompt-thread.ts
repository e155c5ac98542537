/**
 * Renders and tokenizes large prompts on a worker thread, so the chat template (about a millisecond per ten
 * messages) and llama.cpp's synchronous tokenizer (about a second per megabyte on a small CPU) never hold the event
 * loop. The worker has its own vocabulary-only copy of the model, is started on first use, runs one job at a time,
 * and does not keep the process alive.
 */
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { PromptPiece } from "./control-text.js";

/**
 * The worker's code, inline so that it runs the same from src/ under vitest and from dist/: it renders a template
 * with @huggingface/jinja, or tokenizes plain text with special tokens off, passing control token ids through.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { Template } = require(workerData.jinja);
const templates = new Map();
let loading;
const loadModel = () => loading ??= import(workerData.library).then(async ({ getLlama, LlamaLogLevel }) => {
  const open = () => getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.error });
  // From src/ under vitest the module is TypeScript, which a worker cannot import: the binary is then tested as usual.
  const checks = workerData.binaryChecks && await import(workerData.binaryChecks.module).catch(() => undefined);
  const llama = await (checks ? checks.withRememberedBinaryChecks(workerData.binaryChecks.cacheDir, open) : open());
  return llama.loadModel({ modelPath: workerData.path, vocabOnly: true });
});
async function tokenize(pieces) {
  const model = await loadModel();
  const ids = [];
  for (const piece of pieces) {
    if (typeof piece === "number") ids.push(piece);
    else for (const token of model.tokenize(piece, false)) ids.push(token);
  }
  return Uint32Array.from(ids);
}
function render(source, context) {
  if (!templates.has(source)) templates.set(source, new Template(source));
  try {
    return { text: templates.get(source).render(context) };
  } catch (error) {
    return { rejected: String(error && error.message ? error.message : error) };
  }
}
parentPort.on("message", async ({ id, pieces, source, context }) => {
  try {
    if (pieces) {
      const tokens = await tokenize(pieces);
      parentPort.postMessage({ id, tokens }, [tokens.buffer]);
    } else parentPort.postMessage({ id, ...render(source, context) });
  } catch (error) {
    parentPort.postMessage({ id, error: String(error && error.message ? error.message : error) });
  }
});
`;

/** What the worker answers: tokens, a rendered text, a template's refusal, or a failure. */
interface Reply { id: number; tokens?: Uint32Array; text?: string; rejected?: string; error?: string }

interface Pending { resolve(reply: Reply): void; reject(error: Error): void }

/** A lazily started worker that renders and tokenizes prompts for one GGUF file. */
export class PromptThread {
  private worker?: Worker;
  private readonly pending = new Map<number, Pending>();
  /** The answers still awaited. */
  private readonly answers = new Set<Promise<Reply>>();
  private nextId = 0;

  /** `cacheDir`: where the record of llama.cpp binaries that passed their test here is kept (binary-checks.ts), if any. */
  constructor(private readonly modelPath: string, private readonly cacheDir?: string) {}

  /** The pieces' token ids, exactly as `tokenize(piece, false)` on the model gives them, in order. */
  async tokenize(pieces: readonly PromptPiece[]): Promise<number[]> {
    const { tokens } = await this.ask({ pieces });
    return Array.from(tokens ?? []);
  }

  /** The template run on `context`; `{ rejected }` when the template refused it (raise_exception). */
  async render(source: string, context: Record<string, unknown>): Promise<{ text: string } | { rejected: string }> {
    const { text, rejected } = await this.ask({ source, context });
    return rejected === undefined ? { text: text ?? "" } : { rejected };
  }

  /** Another thread for the same file (not started). */
  sibling(): PromptThread {
    return new PromptThread(this.modelPath, this.cacheDir);
  }

  /** Whether the worker is running. */
  get started(): boolean {
    return this.worker !== undefined;
  }

  /**
   * Starts the worker and loads its vocabulary, so the first real job does not wait for them; resolves when done (a
   * failure is left for that job to report).
   */
  async warm(): Promise<void> {
    await this.ask({ pieces: [] }).catch(() => undefined);
  }

  /**
   * Stops the worker once the jobs it was given have ended. Terminated inside one of node-llama-cpp's native calls
   * (the vocabulary load of its warm-up, when the model's own load fails first), the worker's thread is torn down
   * before the call completes, and the completion throws where nothing can catch it: the whole process aborted.
   */
  async dispose(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await Promise.allSettled(this.answers);
    await worker?.terminate();
  }

  private ask(job: object): Promise<Reply> {
    const id = this.nextId++;
    const answer = new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.start().postMessage({ id, ...job });
    });
    this.answers.add(answer);
    const settled = () => void this.answers.delete(answer);
    answer.then(settled, settled);
    return answer;
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const require = createRequire(import.meta.url);
    const binaryChecks = this.cacheDir && { module: new URL("./binary-checks.js", import.meta.url).href, cacheDir: this.cacheDir };
    const workerData = { library: pathToFileURL(require.resolve("node-llama-cpp")).href, jinja: require.resolve("@huggingface/jinja"), path: this.modelPath, binaryChecks };
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData });
    worker.unref();
    worker.on("message", (reply: Reply) => {
      const job = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (reply.error === undefined) job?.resolve(reply);
      else job?.reject(new Error(`the prompt thread failed: ${reply.error}`));
    });
    worker.on("error", (error) => this.failAll(error));
    worker.on("exit", () => {
      if (this.worker === worker) this.worker = undefined;
      this.failAll(new Error("the prompt thread stopped"));
    });
    this.worker = worker;
    return worker;
  }

  private failAll(error: Error): void {
    for (const job of this.pending.values()) job.reject(error);
    this.pending.clear();
  }
}
