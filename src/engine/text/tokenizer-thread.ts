/**
 * Tokenizes large prompts on a worker thread with its own vocabulary-only copy of the model, so llama.cpp's
 * synchronous tokenizer (about a second per megabyte on a small CPU) never holds the event loop. The worker is
 * started on first use, runs one job at a time, and does not keep the process alive.
 */
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { PromptPiece } from "./control-text.js";

/**
 * The worker's code, inline so that it runs the same from src/ under vitest and from dist/: it only loads the
 * vocabulary and tokenizes plain text with special tokens off, passing control token ids through.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const loading = import(workerData.library).then(async ({ getLlama, LlamaLogLevel }) => {
  const llama = await getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.error });
  return llama.loadModel({ modelPath: workerData.path, vocabOnly: true });
});
parentPort.on("message", async ({ id, pieces }) => {
  try {
    const model = await loading;
    const ids = [];
    for (const piece of pieces) {
      if (typeof piece === "number") ids.push(piece);
      else for (const token of model.tokenize(piece, false)) ids.push(token);
    }
    const tokens = Uint32Array.from(ids);
    parentPort.postMessage({ id, tokens }, [tokens.buffer]);
  } catch (error) {
    parentPort.postMessage({ id, error: String(error && error.message ? error.message : error) });
  }
});
`;

interface Pending { resolve(tokens: number[]): void; reject(error: Error): void }

/** A lazily started worker that tokenizes prompt pieces for one GGUF file. */
export class TokenizerThread {
  private worker?: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  constructor(private readonly modelPath: string) {}

  /** The pieces' token ids, exactly as `tokenize(piece, false)` on the model gives them, in order. */
  tokenize(pieces: readonly PromptPiece[]): Promise<number[]> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.start().postMessage({ id, pieces });
    });
  }

  async dispose(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const library = pathToFileURL(createRequire(import.meta.url).resolve("node-llama-cpp")).href;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { library, path: this.modelPath } });
    worker.unref();
    worker.on("message", ({ id, tokens, error }: { id: number; tokens?: Uint32Array; error?: string }) => {
      const job = this.pending.get(id);
      this.pending.delete(id);
      if (tokens) job?.resolve(Array.from(tokens));
      else job?.reject(new Error(`tokenizing failed: ${error}`));
    });
    worker.on("error", (error) => this.failAll(error));
    worker.on("exit", () => {
      if (this.worker === worker) this.worker = undefined;
      this.failAll(new Error("the tokenizer thread stopped"));
    });
    this.worker = worker;
    return worker;
  }

  private failAll(error: Error): void {
    for (const job of this.pending.values()) job.reject(error);
    this.pending.clear();
  }
}
