/**
 * `kiln chat` end to end: the built binary in a real terminal (tmux), on the real default model. Keys go in with
 * send-keys, the screen comes back with capture-pane, polled against a deadline.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/free-port.js";
import { realModelPath } from "../helpers/real-model.js";

const ROOT = join(import.meta.dirname, "..", "..");
const SOCKET = `kiln-test-${process.pid}`;
/** The tmux session the helpers below talk to. */
let SESSION = "chat";

function tmux(...args: string[]): string {
  return execFileSync("tmux", ["-L", SOCKET, ...args], { encoding: "utf8" });
}

/** The screen and its scrollback, wrapped lines joined. */
function screen(): string {
  return tmux("capture-pane", "-p", "-J", "-S", "-500", "-t", SESSION);
}

/** Polls the screen until `check` holds; fails with the last screen when the deadline passes. */
async function waitForScreen(check: (text: string) => boolean, what: string, timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = screen();
    if (check(text)) return text;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the screen was:\n${text}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function type(text: string): void {
  tmux("send-keys", "-t", SESSION, "-l", text);
}

function press(...keys: string[]): void {
  tmux("send-keys", "-t", SESSION, ...keys);
}

/**
 * Types `text` into the input box and sends it once the box shows it: Enter sent right behind the text can reach
 * the chat in the same read on a busy machine, as pasted text rather than a key press.
 */
async function send(text: string): Promise<void> {
  type(text);
  await waitForScreen((screenText) => screenText.includes(`│ ${text.slice(0, 24)}`), `"${text.slice(0, 24)}" in the input box`);
  press("Enter");
}

/** Polls the server's model list until it answers (the model is loaded), with a deadline. */
async function waitForServer(url: string, child: ChildProcess, timeoutMs = 150_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`kiln serve exited with ${child.exitCode}`);
    const ok = await fetch(`${url}/v1/models`).then((response) => response.ok, () => false);
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`kiln serve did not answer at ${url}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The status line is the last non-empty line of the screen. */
const statusLine = (text: string) => text.trimEnd().split("\n").at(-1) ?? "";
/** No reply is streaming: the status line would say "generating". */
const idle = (text: string) => !statusLine(text).includes("generating");

describe("kiln chat in a real terminal", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "kiln-tmux-"));
  });
  afterAll(async () => {
    spawnSync("tmux", ["-L", SOCKET, "kill-server"]);
    await rm(dir, { recursive: true, force: true });
  });

  it("streams a reply, stops one with Esc, saves the conversation and exits cleanly", async () => {
    const home = dirname(dirname(realModelPath()));
    // One thread: on a busy shared machine llama.cpp's threads wait on each other and a second one slows decoding.
    // `exec cat` keeps the pane open after kiln exits, so its exit status stays on screen. CI=true as CI systems set
    // it: the chat must still draw every frame in a real terminal.
    const command = `cd ${ROOT} && CI=true KILN_HOME=${home} node bin/kiln.js chat --max-tokens 32 --temperature 0 --threads 1; echo "[kiln exited $?]"; exec cat`;
    tmux("new-session", "-d", "-s", SESSION, "-x", "100", "-y", "40", command);
    await waitForScreen((text) => text.includes("smollm2-135m") && text.includes("Enter send"), "the chat to open", 150_000);

    await send("Say hello to the potter.");
    await waitForScreen((text) => text.includes("you › Say hello to the potter."), "the sent message");
    const replied = await waitForScreen((text) => idle(text) && /tok\/s/.test(text) && !text.includes("– tok/s"), "the reply to finish", 180_000);
    const reply = replied.split("you › Say hello to the potter.")[1]!.split("╭")[0]!.trim();
    expect(reply.length).toBeGreaterThan(0);
    expect(replied).toMatch(/ctx [1-9]\d*\/\d+/);

    await send("Tell me a very long story about a kiln.");
    await waitForScreen((text) => text.includes("you › Tell me a very long story about a kiln."), "the second message");
    press("Escape");
    await waitForScreen((text) => text.includes("[stopped]") && idle(text), "the reply to stop");

    const file = join(dir, "conversation.json");
    await send(`/save ${file}`);
    await waitForScreen((text) => text.includes("saved the conversation to"), "the save notice");
    const saved = JSON.parse(await readFile(file, "utf8"));
    expect(saved.model).toBe("smollm2-135m");
    expect(saved.messages[0]).toEqual({ role: "user", content: "Say hello to the potter." });
    expect(saved.messages[1].role).toBe("assistant");
    expect(saved.messages[1].content.length).toBeGreaterThan(0);
    expect(saved.messages[2]).toEqual({ role: "user", content: "Tell me a very long story about a kiln." });

    await send("/exit");
    await waitForScreen((text) => text.includes("[kiln exited 0]"), "kiln to exit");

    // The saved file opens again with --load: the earlier turns are back on screen.
    SESSION = "loaded";
    tmux("new-session", "-d", "-s", SESSION, "-x", "100", "-y", "40", command.replace("chat ", `chat --load ${file} `));
    try {
      await waitForScreen((text) => text.includes("Enter send") && text.includes("you › Say hello to the potter."), "the loaded conversation", 150_000);
      // /model loads another engine (here on the same file, named by its path) and unloads the old one.
      await send(`/model ${realModelPath()}`);
      await waitForScreen((text) => text.includes("now chatting with") && !statusLine(text).includes("loading"), "the model switch", 150_000);
      press("C-c");
      press("C-c");
      await waitForScreen((text) => text.includes("[kiln exited 0]"), "kiln to exit on Ctrl+C twice");
    } finally {
      SESSION = "chat";
    }
  }, 600_000);

  it("chats with a running kiln serve through the same screen (--url, OpenAI protocol)", async () => {
    const port = await freePort();
    const server = spawn(process.execPath, [join(ROOT, "bin", "kiln.js"), "serve", "--port", String(port), "--threads", "1", "--parallel", "1", "--ctx-size", "2048", "--model", realModelPath(), "--log-level", "error"], { stdio: "ignore" });
    try {
      await waitForServer(`http://127.0.0.1:${port}`, server);
      SESSION = "remote";
      tmux("new-session", "-d", "-s", SESSION, "-x", "100", "-y", "40", `cd ${ROOT} && node bin/kiln.js chat --url http://127.0.0.1:${port} --api openai --max-tokens 16; echo "[kiln exited $?]"; exec cat`);
      await waitForScreen((text) => text.includes("Enter send") && text.includes("ctx 0/"), "the chat to connect");
      await send("Say hello.");
      const replied = await waitForScreen((text) => text.includes("you › Say hello.") && idle(text) && /ctx [1-9]\d*\//.test(text), "the remote reply", 180_000);
      expect(replied.split("you › Say hello.")[1]!.split("╭")[0]!.trim().length).toBeGreaterThan(0);
      await send("/exit");
      await waitForScreen((text) => text.includes("[kiln exited 0]"), "kiln to exit");
    } finally {
      SESSION = "chat";
      server.kill();
    }
  }, 600_000);

  it("without a terminal it points to kiln run and exits 1", () => {
    const result = spawnSync(process.execPath, [join(ROOT, "bin", "kiln.js"), "chat"], { input: "", encoding: "utf8" });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^kiln: .*terminal/);
    expect(result.stderr).toMatch(/kiln run/);
  });
});
