/** Folds an event stream into one result, so non-streaming responses reuse the streaming path. */
import type { FinishReason, GenerationEvent, PromptEcho, TokenLogprob, Usage } from "./events.js";
import { EngineError } from "../errors/engine-error.js";

export type ResultBlock =
  | { type: "text"; text: string; logprobs?: TokenLogprob[] }
  | { type: "reasoning"; text: string; signature?: string }
  | { type: "tool-call"; id: string; name: string; input: unknown; json: string };

export interface ChatResult {
  model: string;
  blocks: ResultBlock[];
  finishReason: FinishReason;
  stopSequence?: string;
  usage: Usage;
  /** The prompt, when a completion asked for it back (`start.echo`). */
  echo?: PromptEcho;
}

/** Collects every event; throws the EngineError of an `error` event. */
export async function collectResult(events: AsyncIterable<GenerationEvent>): Promise<ChatResult> {
  let model = "";
  let echo: PromptEcho | undefined;
  const blocks: ResultBlock[] = [];
  for await (const event of events) {
    switch (event.type) {
      case "start": model = event.model; echo = event.echo; break;
      case "text-start": blocks[event.index] = { type: "text", text: "" }; break;
      case "text-delta": {
        const block = blocks[event.index] as Extract<ResultBlock, { type: "text" }>;
        block.text += event.text;
        if (event.logprobs) (block.logprobs ??= []).push(...event.logprobs);
        break;
      }
      case "reasoning-start": blocks[event.index] = { type: "reasoning", text: "" }; break;
      case "reasoning-delta": (blocks[event.index] as { text: string }).text += event.text; break;
      case "reasoning-end": if (event.signature) (blocks[event.index] as { signature?: string }).signature = event.signature; break;
      case "tool-call-start": blocks[event.index] = { type: "tool-call", id: event.id, name: event.name, input: {}, json: "" }; break;
      case "tool-call-delta": (blocks[event.index] as { json: string }).json += event.json; break;
      case "tool-call-end": (blocks[event.index] as { input: unknown }).input = event.input; break;
      case "finish": return { model, blocks, finishReason: event.reason, stopSequence: event.stopSequence, usage: event.usage, ...(echo ? { echo } : {}) };
      case "error": throw event.error;
      default: break;
    }
  }
  throw new EngineError("internal", "The event stream ended without a finish event");
}
