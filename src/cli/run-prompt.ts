/**
 * The body of `kiln run`: reads the prompt, opens the local engine, streams the reply (text or NDJSON events)
 * to stdout. Loaded lazily by commands/run.ts, so the engine and the native addon load only when a run starts.
 */
import type { Readable } from "node:stream";
import { type ChatRequest, type SamplingOptions, type GenerationEvent, EngineError } from "../engine/index.js";
import { UsageError } from "./report-error.js";
import { openLocalEngine } from "./local-engine.js";
import type { RunFlags } from "./commands/run.js";

/** Exit code after Ctrl+C, as shells expect (128 + SIGINT). */
const INTERRUPTED = 130;

/** Request settings already derived from the flags. */
export interface RunSettings {
  sampling: SamplingOptions;
  maxTokens: number;
}

/** Runs one prompt; resolves to the exit code. Errors are thrown for report-error to print. */
export async function runPrompt(words: string[], flags: RunFlags, settings: RunSettings): Promise<number> {
  const prompt = await readPrompt(words, process.stdin);
  const ctxSizeAtMost = contextNeeded(prompt, flags.system, settings.maxTokens);
  const { engine, model } = await openLocalEngine({ ...flags, parallel: 1, ctxSizeAtMost });
  const printer = flags.json ? { print: printJsonEvent, end() {} } : createTextPrinter();
  const controller = new AbortController();
  const abort = (): void => controller.abort();
  process.once("SIGINT", abort);
  // A closed pipe (`kiln run … | head -1`) stops generation instead of crashing. The listener stays: writes
  // still queued fail after the loop ends too.
  process.stdout.on("error", abort);
  try {
    const request = buildRequest(model.id, prompt, flags, settings);
    for await (const event of engine.generate(request, { signal: controller.signal })) {
      printer.print(event);
      if (event.type === "error") throw event.error;
    }
    return controller.signal.aborted ? INTERRUPTED : 0;
  } catch (error) {
    if (controller.signal.aborted) return INTERRUPTED;
    throw error;
  } finally {
    printer.end();
    process.off("SIGINT", abort);
    await engine.close();
  }
}

/** Room for the chat template's own text around a one-shot prompt (role markers, a default system prompt). */
const TEMPLATE_TOKENS = 512;

/**
 * The most tokens one reply can take, so `kiln run` does not allocate and clear a KV cache of the model's whole
 * context for a short question (Qwen2.5-Coder-1.5B: 0.9 GB and 1 s at 32k tokens on 2 CPU cores, against 0.5 s at
 * 1k). Each token of a GGUF vocabulary covers at least one byte of text (byte-level BPE, or SentencePiece with byte
 * fallback), so a text's UTF-8 bytes bound its tokens.
 */
export function contextNeeded(prompt: string, system: string | undefined, maxTokens: number): number {
  return Buffer.byteLength(prompt) + Buffer.byteLength(system ?? "") + TEMPLATE_TOKENS + maxTokens;
}

/**
 * The prompt: the arguments, then piped stdin after a blank line. A terminal on stdin is never read (it would
 * wait for input the user does not know is expected).
 */
export async function readPrompt(words: string[], stdin: Readable & { isTTY?: boolean }): Promise<string> {
  const fromArgs = words.join(" ").trim();
  const fromStdin = stdin.isTTY ? "" : (await readAll(stdin)).replace(/\s+$/, "");
  if (fromArgs === "" && fromStdin.trim() === "") {
    throw new UsageError("no prompt given", 'pass it as arguments (kiln run "Hello") or pipe it on stdin (echo "Hello" | kiln run)');
  }
  return [fromArgs, fromStdin].filter((part) => part.trim() !== "").join("\n\n");
}

async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString("utf8");
}

function buildRequest(model: string, prompt: string, flags: RunFlags, settings: RunSettings): ChatRequest {
  return {
    model,
    system: flags.system,
    messages: [{ role: "user", parts: [{ type: "text", text: prompt }] }],
    sampling: settings.sampling,
    stop: flags.stop,
    maxTokens: settings.maxTokens,
  };
}

/** Prints generated text as it arrives; `end` closes the output with a newline. Reasoning goes to stderr. */
function createTextPrinter(): { print(event: GenerationEvent): void; end(): void } {
  let last = "\n";
  return {
    print(event) {
      if (event.type === "text-delta" && event.text !== "") {
        process.stdout.write(event.text);
        last = event.text;
      } else if (event.type === "reasoning-delta") {
        process.stderr.write(event.text);
      }
    },
    end() {
      if (!last.endsWith("\n")) process.stdout.write("\n");
      last = "\n";
    },
  };
}

/** One event per line; an error event carries the error's code, message and details (Error fields do not serialize). */
export function printJsonEvent(event: GenerationEvent): void {
  process.stdout.write(`${JSON.stringify(toJsonEvent(event))}\n`);
}

function toJsonEvent(event: GenerationEvent): unknown {
  if (event.type !== "error") return event;
  const { error } = event;
  const code = error instanceof EngineError ? error.code : "internal";
  return { type: "error", error: { code, message: error.message, details: error.details } };
}
