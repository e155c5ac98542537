/**
 * The chat screen, frame by frame: keystrokes go in through ink-testing-library's stdin, replies come from a
 * scripted source the test feeds, and the frames must show what the user expects.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { render, cleanup } from "ink-testing-library";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChatApp } from "../../src/chat/chat-app.js";
import { initialChatState } from "../../src/chat/chat-state.js";
import type { GenerationEvent } from "../../src/engine/index.js";
import { createScriptedSource, type ScriptedSource } from "../helpers/scripted-chat-source.js";

const ENTER = "\r";
const ESC = "\x1b";
const UP = "\x1b[A";
const TAB = "\t";
const CTRL_C = "\x03";
const ALT_ENTER = "\x1b\r";

const start: GenerationEvent = { type: "start", model: "scripted-model", inputTokens: 12, cachedInputTokens: 0 };
const finish = (outputTokens: number): GenerationEvent => ({ type: "finish", reason: "stop", usage: { inputTokens: 12, cachedInputTokens: 0, outputTokens } });
const delta = (text: string): GenerationEvent => ({ type: "text-delta", index: 0, text });

function open(source: ScriptedSource = createScriptedSource()) {
  const state = initialChatState({ model: source.model.id, sampling: {}, maxTokens: 32 }, { contextSize: source.model.contextSize });
  const app = render(<ChatApp source={source} initialState={state} />);
  /** Writes keys one write at a time, as a terminal delivers key presses. */
  const press = async (...keys: string[]) => {
    for (const key of keys) {
      app.stdin.write(key);
      // Ink reads stdin on the next tick; give it one before the next key.
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  const frame = () => app.lastFrame() ?? "";
  const waitFor = (check: (text: string) => boolean) => vi.waitFor(() => expect(check(frame())).toBe(true), { timeout: 5_000, interval: 10 });
  return { app, source, press, frame, waitFor };
}

afterEach(() => cleanup());

describe("kiln chat screen", () => {
  it("shows the model, the key hint and the context size before anything is sent", async () => {
    const { frame, waitFor } = open();
    await waitFor((text) => text.includes("scripted-model"));
    expect(frame()).toContain("Alt+Enter/Ctrl+J newline");
    expect(frame()).toContain("ctx 0/2048");
  });

  it("sends on Enter and streams the reply into the transcript, then shows the figures", async () => {
    const { source, press, frame, waitFor } = open();
    await press("Hello kiln", ENTER);
    await vi.waitFor(() => expect(source.calls).toHaveLength(1));
    expect(source.calls[0]!.request.messages[0]!.parts).toEqual([{ type: "text", text: "Hello kiln" }]);
    await waitFor((text) => text.includes("you › Hello kiln"));
    source.calls[0]!.push(start, { type: "text-start", index: 0 }, delta("Hi there"));
    await waitFor((text) => text.includes("Hi there") && text.includes("generating"));
    source.calls[0]!.push(delta(", friend"), { type: "text-end", index: 0 }, finish(3));
    await waitFor((text) => text.includes("Hi there, friend") && !text.includes("generating"));
    expect(frame()).toContain("ctx 15/2048");
  });

  it("text and Enter arriving in one read (fast typing) is sent", async () => {
    const { source, press } = open();
    await press("quick message\r");
    await vi.waitFor(() => expect(source.calls).toHaveLength(1));
    expect(source.calls[0]!.request.messages[0]!.parts).toEqual([{ type: "text", text: "quick message" }]);
  });

  it("a reply taller than the screen shows its tail while streaming and all of it once finished", async () => {
    const { source, press, frame, waitFor } = open();
    await press("Count", ENTER);
    await vi.waitFor(() => expect(source.calls).toHaveLength(1));
    const lines = Array.from({ length: 60 }, (_, i) => `line ${i + 1}`);
    source.calls[0]!.push(start, { type: "text-start", index: 0 }, delta(lines.join("\n")));
    await waitFor((text) => text.includes("line 60"));
    expect(frame()).not.toContain("line 1\n");
    source.calls[0]!.push({ type: "text-end", index: 0 }, finish(60));
    await waitFor((text) => text.includes("line 1\n") && text.includes("line 60") && !text.includes("generating"));
  });

  it("a pasted chunk keeps its line breaks; a CR at its end sends", async () => {
    const { source, press } = open();
    await press("pasted one\rpasted two\r");
    await vi.waitFor(() => expect(source.calls).toHaveLength(1));
    expect(source.calls[0]!.request.messages[0]!.parts).toEqual([{ type: "text", text: "pasted one\npasted two" }]);
  });

  it("a modifier inserts a newline instead of sending", async () => {
    const { source, press, waitFor } = open();
    await press("first line", ALT_ENTER, "second line", "\n", "third");
    await waitFor((text) => text.includes("first line") && text.includes("second line") && text.includes("third"));
    expect(source.calls).toHaveLength(0);
    await press(ENTER);
    await vi.waitFor(() => expect(source.calls).toHaveLength(1));
    expect(source.calls[0]!.request.messages[0]!.parts).toEqual([{ type: "text", text: "first line\nsecond line\nthird" }]);
  });

  it("Esc stops a reply mid-stream: the partial text stays, marked [stopped], and the stream is aborted", async () => {
    const { source, press, waitFor } = open();
    await press("Tell me a story", ENTER);
    await vi.waitFor(() => expect(source.calls).toHaveLength(1));
    source.calls[0]!.push(start, { type: "text-start", index: 0 }, delta("Once upon"));
    await waitFor((text) => text.includes("Once upon"));
    await press(ESC);
    await waitFor((text) => text.includes("Once upon [stopped]"));
    await vi.waitFor(() => expect(source.calls[0]!.signal.aborted).toBe(true));
  });

  it("Up recalls an earlier input", async () => {
    const { source, press, waitFor } = open();
    await press("remember me", ENTER);
    await vi.waitFor(() => expect(source.calls).toHaveLength(1));
    source.calls[0]!.push(start, { type: "text-start", index: 0 }, delta("ok"), { type: "text-end", index: 0 }, finish(1));
    await waitFor((text) => text.includes("ok") && !text.includes("generating"));
    await press(UP);
    await waitFor((text) => text.split("╭").at(-1)!.includes("remember me"));
  });

  it("slash commands: suggestions while typing, Tab completion, /help, /temperature", async () => {
    const { source, press, frame, waitFor } = open();
    await press("/");
    await waitFor((text) => text.includes("/temperature <x>") && text.includes("/retry"));
    await press("te", TAB);
    await waitFor((text) => text.includes("/temperature "));
    await press("0.2", ENTER);
    await waitFor((text) => text.includes("temperature set to 0.2"));
    await press("/help", ENTER);
    await waitFor((text) => text.includes("/save <file>") && text.includes("Ctrl+C twice exit"));
    await press("Hi", ENTER);
    await vi.waitFor(() => expect(source.calls).toHaveLength(1));
    expect(source.calls[0]!.request.sampling).toEqual({ temperature: 0.2 });
    expect(frame()).not.toContain("unknown command");
  });

  it("/save writes the conversation as Anthropic messages JSON", async () => {
    const dir = await mkdtemp(join(tmpdir(), "kiln-chat-"));
    try {
      const { source, press, waitFor } = open();
      await press("Hi", ENTER);
      await vi.waitFor(() => expect(source.calls).toHaveLength(1));
      source.calls[0]!.push(start, { type: "text-start", index: 0 }, delta("Hello!"), { type: "text-end", index: 0 }, finish(2));
      await waitFor((text) => text.includes("Hello!") && !text.includes("generating"));
      const file = join(dir, "chat.json");
      await press(`/save ${file}`, ENTER);
      await waitFor((text) => text.includes(`saved the conversation to ${file}`));
      expect(JSON.parse(await readFile(file, "utf8"))).toEqual({
        model: "scripted-model",
        messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello!" }],
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("/model switches the source's model and the status line follows", async () => {
    const { source, press, waitFor } = open();
    await press("/model other-model", ENTER);
    await waitFor((text) => text.includes("now chatting with other-model") && text.includes("ctx 0/4096"));
    expect(source.switched).toEqual(["other-model"]);
  });

  it("Ctrl+C twice in one read exits too", async () => {
    const { app, press } = open();
    expect(app.stdin.listenerCount("readable")).toBeGreaterThan(0);
    await press(CTRL_C + CTRL_C);
    await vi.waitFor(() => expect(app.stdin.listenerCount("readable")).toBe(0));
  });

  it("Ctrl+C twice exits; the first press only warns", async () => {
    const { app, press, waitFor } = open();
    // While mounted, Ink listens on stdin for keys; once the app exits it lets go.
    const listening = () => app.stdin.listenerCount("readable");
    await press(CTRL_C);
    await waitFor((text) => text.includes("press Ctrl+C again to exit"));
    expect(listening()).toBeGreaterThan(0);
    await press(CTRL_C);
    await vi.waitFor(() => expect(listening()).toBe(0));
  });

  it("an error before the first event shows on the reply", async () => {
    const source = createScriptedSource();
    const failing = { ...source, model: source.model, generate: () => { throw new Error("model exploded"); } };
    const { press, waitFor } = open(failing as ScriptedSource);
    await press("Hi", ENTER);
    await waitFor((text) => text.includes("error: model exploded"));
  });
});
