/**
 * A chat source the test drives by hand: each `generate` call waits for the events the test pushes, so frames
 * can be checked mid-reply. It records the requests and whether the chat aborted them.
 */
import type { ChatSource, SourceModel } from "../../src/chat/chat-source.js";
import type { ChatRequest, GenerationEvent } from "../../src/engine/index.js";

export interface ScriptedCall {
  request: ChatRequest;
  signal: AbortSignal;
  /** Delivers events to this reply's stream. */
  push(...events: GenerationEvent[]): void;
}

export interface ScriptedSource extends ChatSource {
  calls: ScriptedCall[];
  switched: string[];
}

export function createScriptedSource(model: SourceModel = { id: "scripted-model", contextSize: 2048 }): ScriptedSource {
  const calls: ScriptedCall[] = [];
  const switched: string[] = [];
  let current = model;
  return {
    calls,
    switched,
    get model() {
      return current;
    },
    generate(request, signal) {
      const pending: GenerationEvent[] = [];
      let wake: (() => void) | undefined;
      calls.push({ request, signal, push: (...events) => { pending.push(...events); wake?.(); } });
      signal.addEventListener("abort", () => wake?.());
      return (async function* () {
        for (;;) {
          while (pending.length > 0) {
            const event = pending.shift()!;
            yield event;
            if (event.type === "finish" || event.type === "error") return;
          }
          if (signal.aborted) return;
          await new Promise<void>((resolve) => (wake = resolve));
        }
      })();
    },
    async switchModel(ref) {
      switched.push(ref);
      current = { id: ref, contextSize: 4096 };
      return current;
    },
    async close() {},
  };
}
