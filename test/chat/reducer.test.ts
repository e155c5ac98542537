/** The chat reducer is pure: every test folds actions and GenerationEvents into state and checks the result. */
import { describe, expect, it } from "vitest";
import { chatReducer } from "../../src/chat/reducer.js";
import { initialChatState, type ChatAction, type ChatState, type Effect } from "../../src/chat/chat-state.js";
import { EngineError, type GenerationEvent } from "../../src/engine/index.js";

const settings = { model: "smollm2-135m", sampling: {}, maxTokens: 32 };

function fold(state: ChatState, ...actions: ChatAction[]): ChatState {
  return actions.reduce(chatReducer, state);
}

function type(text: string): ChatAction[] {
  return [{ type: "insert", text }];
}

function send(state: ChatState, text: string): ChatState {
  return fold(state, ...type(text), { type: "submit" });
}

function lastEffect(state: ChatState): Effect {
  const effect = state.effects.at(-1);
  if (!effect) throw new Error("no effect queued");
  return effect;
}

/** Feeds events of the active generation, at the given Unix ms times (100 ms apart by default). */
function stream(state: ChatState, events: GenerationEvent[], start = 1_000): ChatState {
  const id = state.generation?.id ?? -1;
  return events.reduce((current, event, i) => chatReducer(current, { type: "generation", id, event, at: start + i * 100 }), state);
}

const reply = (texts: string[], reason: "stop" | "length" = "stop"): GenerationEvent[] => [
  { type: "start", model: "smollm2-135m", inputTokens: 20, cachedInputTokens: 0 },
  { type: "text-start", index: 0 },
  ...texts.map((text) => ({ type: "text-delta" as const, index: 0, text })),
  { type: "text-end", index: 0 },
  { type: "finish", reason, usage: { inputTokens: 20, cachedInputTokens: 0, outputTokens: texts.length } },
];

describe("sending and streaming", () => {
  it("sends the input as a user turn and queues a generate effect with the conversation", () => {
    const state = send(initialChatState({ ...settings, system: "Be brief" }), "Hello there");
    expect(state.input.text).toBe("");
    expect(state.entries.map((entry) => entry.kind)).toEqual(["user", "assistant"]);
    expect(state.entries[1]).toMatchObject({ status: "waiting", text: "" });
    const effect = lastEffect(state);
    expect(effect.kind).toBe("generate");
    if (effect.kind !== "generate") return;
    expect(effect.generationId).toBe(state.generation?.id);
    expect(effect.request).toMatchObject({ model: "smollm2-135m", system: "Be brief", maxTokens: 32 });
    expect(effect.request.messages).toEqual([{ role: "user", parts: [{ type: "text", text: "Hello there" }] }]);
  });

  it("ignores an empty input", () => {
    const state = send(initialChatState(settings), "   ");
    expect(state.entries).toEqual([]);
    expect(state.effects).toEqual([]);
  });

  it("streams text into the reply and ends it with exact figures from usage", () => {
    const sent = send(initialChatState(settings, { contextSize: 2048 }), "Hi");
    const midway = stream(sent, reply(["Hel", "lo", "!"]).slice(0, 4));
    expect(midway.entries[1]).toMatchObject({ status: "streaming", text: "Hello" });
    expect(midway.contextUsed).toBe(22);
    const done = stream(sent, reply(["Hel", "lo", "!"]));
    expect(done.entries[1]).toMatchObject({ status: "done", text: "Hello!" });
    expect(done.generation).toBeUndefined();
    expect(done.contextUsed).toBe(23);
    // Three tokens, the first at t=1200 and the finish at t=1600: two tokens after the first in 0.4 s.
    expect(done.tokensPerSecond).toBeCloseTo(5);
  });

  it("marks a reply cut by the token limit", () => {
    const done = stream(send(initialChatState(settings), "Hi"), reply(["a", "b"], "length"));
    expect(done.entries[1]).toMatchObject({ status: "done", truncated: true });
  });

  it("shows an error event on the reply and leaves the failed reply out of the next request", () => {
    const sent = send(initialChatState(settings), "Hi");
    const failed = stream(sent, [{ type: "error", error: new EngineError("context_overflow", "prompt is too long: 9000 tokens > 8192 maximum") }]);
    expect(failed.entries[1]).toMatchObject({ status: "error", error: "prompt is too long: 9000 tokens > 8192 maximum" });
    expect(failed.generation).toBeUndefined();
    const next = lastEffect(send(failed, "Again"));
    expect(next.kind === "generate" && next.request.messages.map((message) => message.role)).toEqual(["user", "user"]);
  });

  it("refuses a second message while a reply streams, keeping the input", () => {
    const sent = stream(send(initialChatState(settings), "Hi"), reply(["x"]).slice(0, 3));
    const again = send(sent, "more");
    expect(again.entries).toHaveLength(2);
    expect(again.input.text).toBe("more");
    expect(again.flash).toMatch(/Esc/);
  });

  it("includes earlier turns in the next request, in order", () => {
    const first = stream(send(initialChatState(settings), "One"), reply(["Uno"]));
    const effect = lastEffect(send(first, "Two"));
    expect(effect.kind === "generate" && effect.request.messages.map((message) => [message.role, (message.parts[0] as { text: string }).text])).toEqual([
      ["user", "One"],
      ["assistant", "Uno"],
      ["user", "Two"],
    ]);
  });
});

describe("stopping and exiting", () => {
  it("Esc stops the reply: the partial text stays, marked, and later events are ignored", () => {
    const sent = send(initialChatState(settings), "Hi");
    const events = reply(["Par", "tial", " more"]);
    const partial = stream(sent, events.slice(0, 4));
    const stopped = chatReducer(partial, { type: "stop" });
    expect(stopped.entries[1]).toMatchObject({ status: "stopped", text: "Partial" });
    expect(stopped.generation).toBeUndefined();
    const late = chatReducer(stopped, { type: "generation", id: sent.generation!.id, event: events[4]!, at: 5_000 });
    expect(late).toBe(stopped);
    const effect = lastEffect(send(stopped, "Go on"));
    expect(effect.kind === "generate" && effect.request.messages.map((message) => message.role)).toEqual(["user", "assistant", "user"]);
  });

  it("Ctrl+C once arms exit (and stops a reply); a second one queues exit; any other key disarms", () => {
    const once = chatReducer(send(initialChatState(settings), "Hi"), { type: "interrupt" });
    expect(once.exitArmed).toBe(true);
    expect(once.entries[1]).toMatchObject({ status: "stopped" });
    expect(lastEffect(chatReducer(once, { type: "interrupt" })).kind).toBe("exit");
    const disarmed = fold(once, ...type("x"), { type: "interrupt" });
    expect(disarmed.exitArmed).toBe(true);
    expect(disarmed.effects.some((effect) => effect.kind === "exit")).toBe(false);
  });
});

describe("editing and history", () => {
  it("a modifier newline makes a multi-line input, sent as one message", () => {
    const state = fold(initialChatState(settings), ...type("line one"), { type: "newline" }, ...type("line two"), { type: "submit" });
    expect(state.entries[0]).toMatchObject({ kind: "user", text: "line one\nline two" });
  });

  it("edits at the cursor", () => {
    const state = fold(initialChatState(settings), ...type("helo"), { type: "move", to: "left" }, ...type("l"), { type: "move", to: "end" }, { type: "backspace" });
    expect(state.input).toEqual({ text: "hell", cursor: 4 });
  });

  it("Up and Down browse earlier inputs and give back the unsent draft", () => {
    let state = stream(send(initialChatState(settings), "first"), reply(["a"]));
    state = stream(send(state, "second"), reply(["b"]));
    state = fold(state, ...type("draft"), { type: "up" });
    expect(state.input.text).toBe("second");
    state = fold(state, { type: "up" }, { type: "up" });
    expect(state.input.text).toBe("first");
    state = fold(state, { type: "down" });
    expect(state.input.text).toBe("second");
    state = fold(state, { type: "down" });
    expect(state.input.text).toBe("draft");
  });

  it("Up in a multi-line input moves between its lines before reaching history", () => {
    let state = stream(send(initialChatState(settings), "old"), reply(["a"]));
    state = fold(state, ...type("ab"), { type: "newline" }, ...type("cd"), { type: "up" });
    expect(state.input).toEqual({ text: "ab\ncd", cursor: 2 });
    state = fold(state, { type: "up" });
    expect(state.input.text).toBe("old");
  });
});

describe("slash commands", () => {
  it("Tab completes a unique command and a common prefix", () => {
    expect(fold(initialChatState(settings), ...type("/te"), { type: "complete" }).input.text).toBe("/temperature ");
    // "/s" could be /system or /save: nothing to add.
    expect(fold(initialChatState(settings), ...type("/s"), { type: "complete" }).input.text).toBe("/s");
    expect(fold(initialChatState(settings), ...type("/re"), { type: "complete" }).input.text).toBe("/retry");
  });

  it("/system and /temperature change the next request", () => {
    const state = send(send(send(initialChatState(settings), "/system Answer in French"), "/temperature 0.3"), "Bonjour");
    const effect = lastEffect(state);
    expect(effect.kind === "generate" && effect.request).toMatchObject({ system: "Answer in French", sampling: { temperature: 0.3 } });
  });

  it("/temperature refuses a value out of range and says how to use it", () => {
    const state = send(initialChatState(settings), "/temperature hot");
    expect(state.settings.sampling.temperature).toBeUndefined();
    expect(state.entries.at(-1)).toMatchObject({ kind: "notice", tone: "error" });
  });

  it("/save queues the conversation in the Anthropic messages format", () => {
    const chatted = stream(send(initialChatState({ ...settings, system: "sys" }), "Hi"), reply(["Hello"]));
    const effect = lastEffect(send(chatted, "/save chat.json"));
    expect(effect).toMatchObject({
      kind: "save",
      path: "chat.json",
      conversation: { model: "smollm2-135m", system: "sys", messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello" }] },
    });
  });

  it("a loaded conversation continues where it stopped", () => {
    const loaded = { model: "m", system: "sys", messages: [{ role: "user" as const, content: "Hi" }, { role: "assistant" as const, content: "Hello" }] };
    const effect = lastEffect(send(initialChatState(settings, { loaded }), "Next"));
    expect(effect.kind === "generate" && effect.request).toMatchObject({ system: "sys" });
    expect(effect.kind === "generate" && effect.request.messages).toHaveLength(3);
  });

  it("/retry generates the last reply again, leaving the old one out of the conversation", () => {
    const chatted = stream(send(initialChatState(settings), "Hi"), reply(["Hello"]));
    const retried = send(chatted, "/retry");
    const effect = lastEffect(retried);
    expect(effect.kind === "generate" && effect.request.messages.map((message) => message.role)).toEqual(["user"]);
    expect(retried.entries[1]).toMatchObject({ discarded: true });
    expect(retried.generation).toBeDefined();
  });

  it("/clear starts a new conversation, /help lists commands, unknown commands are refused", () => {
    const chatted = stream(send(initialChatState(settings), "Hi"), reply(["Hello"]));
    const cleared = send(chatted, "/clear");
    expect(cleared.entries.filter((entry) => entry.kind !== "notice")).toEqual([]);
    expect(cleared.epoch).toBe(chatted.epoch + 1);
    const help = send(cleared, "/help");
    expect(help.entries.at(-1)).toMatchObject({ kind: "notice", text: expect.stringContaining("/save <file>") });
    expect(send(help, "/frobnicate").entries.at(-1)).toMatchObject({ tone: "error" });
  });

  it("/model and /exit become effects; the switch is reported back", () => {
    const switching = send(initialChatState(settings), "/model other.gguf");
    expect(lastEffect(switching)).toMatchObject({ kind: "switch-model", ref: "other.gguf" });
    expect(switching.loading).toBeDefined();
    const switched = chatReducer(switching, { type: "model-switched", model: "other", contextSize: 4096 });
    expect(switched).toMatchObject({ loading: undefined, contextSize: 4096, settings: { model: "other" } });
    expect(lastEffect(send(switched, "/exit")).kind).toBe("exit");
  });

  it("effects leave the queue once the shell has started them", () => {
    const sent = send(initialChatState(settings), "Hi");
    const started = chatReducer(sent, { type: "effects-started", upTo: lastEffect(sent).id });
    expect(started.effects).toEqual([]);
    expect(started.generation).toEqual(sent.generation);
  });
});
