import { parseBoundedJson } from "../lib/json-depth.js";

/** Parses streamed tool-call arguments; a missing or broken JSON text becomes an empty object, as clients expect. */
export function parseToolInput(text: string): unknown {
  try {
    return text === "" ? {} : parseBoundedJson(text);
  } catch {
    return {};
  }
}
