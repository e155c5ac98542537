/**
 * What every OpenAI response and chunk carries besides its choices — id, created, model, the fingerprint — and the
 * tool-call pieces chat completions and the Responses API write alike.
 */
import { toToolCallId } from "../../../lib/ids.js";

/** Identity of one response: the same id/created/model go on every chunk of a stream. */
export interface ResponseMeta {
  id: string;
  /** Unix seconds. */
  created: number;
  /** The model id as the client sent it (OpenAI echoes the request's model). */
  model: string;
  /** Whether logprobs were asked for: then each choice carries them, else `logprobs: null`. */
  logprobs?: boolean;
}

/** Constant fingerprint: kiln has no deployment revisions to tell apart. */
export const SYSTEM_FINGERPRINT = "fp_kiln";

/** OpenAI clients expect `call_…` ids. */
export function toCallId(id: string): string {
  return toToolCallId("call_", id);
}

/** The streamed JSON text when there was any, else the parsed input re-serialized ("{}" for no arguments). */
export function argumentsText(json: string, input: unknown): string {
  return json.trim() ? json : JSON.stringify(input ?? {});
}
