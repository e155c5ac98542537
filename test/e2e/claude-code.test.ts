/**
 * Claude Code itself (the pinned `@anthropic-ai/claude-code` devDependency, its native binary) runs
 * non-interactively against a real kiln server with the real default model and must succeed.
 *
 * The small default model has an 8k context, far less than Claude Code's full agent prompt (~25 tool schemas),
 * so the run uses `--tools ""` and a short `--system-prompt`: what is checked is the wire protocol (headers,
 * betas, system blocks, thinking/effort fields, streaming grammar), not the model's agentic skill. The server caps
 * output at 48 tokens (Claude Code asks for 32000); greedy decoding and sentence-end stop sequences end the reply first.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Engine, ChatRequest } from "../../src/engine/index.js";
import type { ResponseRecord } from "../../src/server/context.js";
import { startTestServer, TEST_MODEL, type TestServer } from "../helpers/server.js";

const TOKEN = "kiln-e2e-token";
const records: ResponseRecord[] = [];
/** Every request as the engine received it (after the Anthropic adapter). */
const requests: ChatRequest[] = [];
let server: TestServer;
let home: string;

/** The native binary the platform package ships (installed without running install scripts). */
function claudeBinary(): string {
  const require = createRequire(import.meta.url);
  const platformPackage = `@anthropic-ai/claude-code-${process.platform}-${process.arch}/package.json`;
  const binary = join(dirname(require.resolve(platformPackage)), process.platform === "win32" ? "claude.exe" : "claude");
  if (!existsSync(binary)) throw new Error(`Claude Code binary missing at ${binary}: run npm install`);
  return binary;
}

/** The fields merged into every request body by default: greedy, and sentence ends as stop sequences. */
const SHORT_REPLIES = { temperature: 0, stop_sequences: [".", "!", "?", "\n"] };

/**
 * Runs the binary against the server; `auth` picks the variable Claude Code takes the key from, `extraBody` the
 * fields merged into every request body.
 */
function runClaude(args: string[], auth: "ANTHROPIC_AUTH_TOKEN" | "ANTHROPIC_API_KEY" = "ANTHROPIC_AUTH_TOKEN", extraBody: object = SHORT_REPLIES): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: home,
    ANTHROPIC_BASE_URL: server.url,
    [auth]: TOKEN,
    ANTHROPIC_MODEL: TEST_MODEL,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: TEST_MODEL,
    ANTHROPIC_SMALL_FAST_MODEL: TEST_MODEL,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    CLAUDE_CODE_MAX_RETRIES: "1",
    // The reply must end on its own: one cut at the server's cap sends Claude Code into its output-limit recovery
    // turns. Greedy decoding plus sentence-end stop sequences (merged into every request body) keep it short.
    CLAUDE_CODE_EXTRA_BODY: JSON.stringify(extraBody),
  };
  return new Promise((resolve, reject) => {
    // stdin closed: in -p mode Claude Code otherwise waits a few seconds for piped input.
    const child = spawn(claudeBinary(), args, { env, cwd: home, stdio: ["ignore", "pipe", "pipe"], timeout: 580_000 });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "kiln-claude-home-"));
  const recordRequests = (engine: Engine): Engine => ({
    ...engine,
    generate: (request, options) => {
      requests.push(request);
      return engine.generate(request, options);
    },
  });
  server = await startTestServer({ apiKeys: [TOKEN], ctxSize: 4096, parallel: 2, maxOutputTokens: 64, onResponse: (r) => records.push({ ...r }), wrapEngine: recordRequests });
});

afterAll(async () => {
  await server?.close();
  if (home) rmSync(home, { recursive: true, force: true });
});

describe("Claude Code against kiln serve", { timeout: 600_000 }, () => {
  it('claude -p "say hi" --output-format json exits 0 with is_error false and the model\'s text', async () => {
    const run = await runClaude(["-p", "say hi", "--output-format", "json", "--tools", "", "--system-prompt", "Reply with a short greeting."]);
    expect(run.code, `stdout: ${run.stdout}\nstderr: ${run.stderr}`).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({ type: "result", is_error: false });
    expect(typeof result.result).toBe("string");
    const calls = records.filter((r) => r.route === "/v1/messages");
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.every((r) => r.status === 200 && r.keyId === "static:1" && r.stream === true)).toBe(true);
  });

  it("authenticates with ANTHROPIC_API_KEY (x-api-key) as well, and stream-json assistant events carry the request-id", async () => {
    const before = records.length;
    const run = await runClaude(["-p", "say hi", "--output-format", "stream-json", "--verbose", "--tools", "", "--system-prompt", "Reply with a short greeting."], "ANTHROPIC_API_KEY");
    expect(run.code, `stdout: ${run.stdout}\nstderr: ${run.stderr}`).toBe(0);
    const events = run.stdout.trim().split("\n").map((line) => JSON.parse(line) as { type: string; request_id?: string; is_error?: boolean });
    expect(events.at(-1)).toMatchObject({ type: "result", is_error: false });
    const served = new Set(records.slice(before).filter((r) => r.route === "/v1/messages" && r.status === 200).map((r) => r.requestId));
    const assistant = events.filter((event) => event.type === "assistant");
    expect(assistant.length).toBeGreaterThan(0);
    for (const event of assistant) expect(served.has(event.request_id ?? "")).toBe(true);
  });

  it("runs Bash with the model's streamed tool input and sends the matching tool_result in the next request", async () => {
    const before = requests.length;
    // The small model is made to call Bash by forcing the tool (kiln enforces tool_choice with a grammar). Which
    // command it writes is its own choice (greedy: "git" at the time of writing); only harmless read-only ones are
    // allowed to run, anything else is denied and comes back as an error result — the round trip is the same.
    const forceBash = { temperature: 0, tool_choice: { type: "tool", name: "Bash" } };
    const run = await runClaude(["-p", "echo kiln-bash-ok", "--output-format", "json", "--tools", "Bash", "--allowedTools", "Bash(echo:*)", "Bash(git:*)", "Bash(ls:*)", "Bash(pwd)", "--max-turns", "2", "--system-prompt", "Run the user message as a shell command with the Bash tool."], "ANTHROPIC_AUTH_TOKEN", forceBash);
    const sent = requests.slice(before);
    expect(sent.length, `stdout: ${run.stdout}\nstderr: ${run.stderr}`).toBeGreaterThanOrEqual(2);
    const history = sent[1]!.messages;
    const call = history.flatMap((m) => m.parts).find((part) => part.type === "tool-call");
    const result = history.flatMap((m) => m.parts).find((part) => part.type === "tool-result");
    expect(call).toMatchObject({ type: "tool-call", name: "Bash" });
    expect(result).toMatchObject({ type: "tool-result", toolCallId: (call as { id: string }).id });
    const command = String((call as { input: { command?: unknown } }).input.command ?? "");
    const output = JSON.stringify((result as { content: unknown }).content);
    console.info(`Bash command: ${command}; result: ${output.slice(0, 200)}`);
    const allowed = /^(echo|git|ls|pwd)\b/.test(command);
    // An allowed command ran: its output (or exit status), not a request for approval, is the result.
    if (allowed) expect(output).not.toContain("requires approval");
    if (/^echo [\w -]+$/.test(command)) expect(output).toContain(command.slice(5).trim());
  });

  it('claude -p "/context" completes', async () => {
    const run = await runClaude(["-p", "/context", "--output-format", "json", "--tools", "", "--system-prompt", "Reply with a short greeting."]);
    expect(run.code, `stdout: ${run.stdout}\nstderr: ${run.stderr}`).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ type: "result", is_error: false });
  });
});
