/**
 * `kiln run` as users run it: the built binary as a child process, on the real default model. Outputs are
 * checked for shape (events, reasons, counts, exit codes), never for exact prose.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkEventSequence, type GenerationEvent } from "../../src/engine/index.js";
import { catalogModelPath, realModelPath } from "../helpers/real-model.js";

const BIN = join(import.meta.dirname, "..", "..", "bin", "kiln.js");

interface Outcome { code: number | null; stdout: string; stderr: string }

/** Runs the binary with `args`, writes `input` to its stdin (then closes it), resolves when it exits. */
function kiln(args: string[], options: { input?: string; env?: NodeJS.ProcessEnv; onStdout?: (child: ReturnType<typeof spawn>, text: string) => void } = {}): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "run", ...args], { env: { ...process.env, ...options.env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      options.onStdout?.(child, stdout);
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? "");
  });
}

function parseLines(stdout: string): GenerationEvent[] {
  return stdout.trimEnd().split("\n").map((line) => JSON.parse(line) as GenerationEvent);
}

/** The store holding the real default model, so runs without --model find it there and pull nothing. */
const env = (): NodeJS.ProcessEnv => ({ KILN_HOME: dirname(dirname(realModelPath())) });
// One thread: on a busy shared machine llama.cpp's threads wait on each other and a second one slows decoding.
const model = () => ["--model", realModelPath(), "--threads", "1"];

describe("kiln run on the real model", () => {
  let jsonRun: Outcome;
  beforeAll(async () => {
    jsonRun = await kiln([...model(), "--json", "--max-tokens", "5", "--temperature", "0", "Name a colour."]);
  });

  it("streams a reply to the prompt in the arguments, from the default model, ending with a newline", async () => {
    const result = await kiln(["--threads", "1", "--max-tokens", "12", "Write a haiku about kilns"], { env: env() });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.trim().length).toBeGreaterThan(0);
    expect(result.stdout.endsWith("\n")).toBe(true);
  });

  it("--json prints one well-formed event per line, ending with finish and usage", () => {
    expect(jsonRun.code).toBe(0);
    const events = parseLines(jsonRun.stdout);
    expect(checkEventSequence(events)).toEqual([]);
    const finish = events.at(-1)!;
    expect(finish.type).toBe("finish");
    if (finish.type !== "finish") return;
    expect(finish.usage.inputTokens).toBeGreaterThan(0);
  });

  it("--max-tokens 5 stops after exactly 5 output tokens with reason length", () => {
    const finish = parseLines(jsonRun.stdout).at(-1)!;
    expect(finish).toMatchObject({ type: "finish", reason: "length", usage: { outputTokens: 5 } });
  });

  it("--stop (repeatable) ends the reply at a sequence the model produces, reporting which one", async () => {
    // At temperature 0 the same request generates the same text: stop at a piece of what it generated before.
    const pieces = parseLines(jsonRun.stdout).flatMap((event) => (event.type === "text-delta" && event.text.trim() !== "" ? [event.text] : []));
    const stop = pieces[1] ?? pieces[0]!;
    const result = await kiln([...model(), "--json", "--max-tokens", "5", "--temperature", "0", "--stop", "never-generated-xyz", "--stop", stop, "Name a colour."]);
    expect(result.code).toBe(0);
    expect(parseLines(result.stdout).at(-1)).toMatchObject({ type: "finish", reason: "stop-sequence", stopSequence: stop });
  });

  it("appends piped stdin to the prompt", async () => {
    const piped = "Kilns are insulated chambers used to fire pottery, bricks and glass at high temperatures.";
    const result = await kiln([...model(), "--json", "--max-tokens", "3", "--temperature", "0", "Name a colour."], { input: piped });
    expect(result.code).toBe(0);
    const start = parseLines(result.stdout)[0]!;
    const alone = parseLines(jsonRun.stdout)[0]!;
    expect(start.type === "start" && alone.type === "start").toBe(true);
    if (start.type !== "start" || alone.type !== "start") return;
    // The same prompt plus a sentence of stdin: the rendered prompt grew by that sentence's tokens.
    expect(start.inputTokens).toBeGreaterThan(alone.inputTokens + 10);
  });

  it("reads the whole prompt from stdin when no arguments are given", async () => {
    const result = await kiln([...model(), "--max-tokens", "3"], { input: "Say hello.\n" });
    expect(result.code).toBe(0);
    expect(result.stdout.trim().length).toBeGreaterThan(0);
  });

  it("Ctrl+C stops generation cleanly", async () => {
    const result = await kiln([...model(), "--max-tokens", "48", "--temperature", "0", "Count from one to one hundred in words."], {
      onStdout: (child, text) => {
        if (text.length > 0 && child.exitCode === null && !child.killed) child.kill("SIGINT");
      },
    });
    expect(result.code).toBe(130);
    expect(result.stderr).toBe("");
    expect(result.stdout.endsWith("\n")).toBe(true);
  });
});

describe("kiln run input errors", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "kiln-run-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** One `kiln: …` line, optionally followed by one `hint: …` line. */
  function expectOneError(stderr: string, pattern: RegExp): void {
    const lines = stderr.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^kiln: /);
    expect(lines[0]).toMatch(pattern);
    expect(lines.length).toBeLessThanOrEqual(2);
    if (lines[1]) expect(lines[1]).toMatch(/^hint: /);
  }

  it.each([
    [["--temperature", "abc"], /temperature/],
    [["--temperature", "3"], /temperature/],
    [["--top-p", "1.5"], /top-p/],
    [["--top-k", "2.5"], /top-k/],
    [["--max-tokens", "0"], /max-tokens/],
    [["--seed", "-1"], /seed/],
    [["--draft-max", "0"], /draft-max/],
    [["--bogus"], /unknown option '--bogus'/],
  ])("%j exits 1 with one clear line", async (flags, pattern) => {
    const result = await kiln([...flags, "hello"]);
    expect(result.code).toBe(1);
    expectOneError(result.stderr, pattern);
    expect(result.stdout).toBe("");
  });

  it("no prompt at all exits 1 with a hint", async () => {
    const result = await kiln([]);
    expect(result.code).toBe(1);
    expectOneError(result.stderr, /no prompt/);
    expect(result.stderr).toMatch(/^hint: /m);
  });

  it("a model file that does not exist exits 1 (the user named it), naming the file", async () => {
    const missing = join(dir, "missing.gguf");
    const result = await kiln(["--model", missing, "hello"]);
    expect(result.code).toBe(1);
    expectOneError(result.stderr, new RegExp(missing.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
  });

  it("a file that is not a GGUF model exits 2 (a model failure), naming the file", async () => {
    const broken = join(dir, "broken.gguf");
    await writeFile(broken, "this is not a model");
    const result = await kiln(["--model", broken, "hello"]);
    expect(result.code).toBe(2);
    expect(result.stderr.split("\n")[0]).toMatch(/^kiln: .*broken\.gguf/);
  });

  it("a draft model with another vocabulary exits 1, naming both models and why", async () => {
    const result = await kiln(["--model", catalogModelPath("qwen2.5-coder-0.5b"), "--draft-model", realModelPath(), "--threads", "1", "hello"]);
    expect(result.code).toBe(1);
    expectOneError(result.stderr, /^kiln: smollm2-135m\.gguf cannot draft for qwen2\.5-coder-0\.5b\.gguf: the two models' vocabularies differ \(.+\)$/);
    expect(result.stdout).toBe("");
  });
});
