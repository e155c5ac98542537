/**
 * Tool-call arguments read back from another server's stream: no text means no arguments ({}); text that is not
 * JSON, or JSON nested past the limit, is the other server's failure, reported rather than replaced by a guess.
 */
import { EngineError } from "../errors/engine-error.js";
import { JsonTooDeepError, MAX_JSON_DEPTH, parseBoundedJson } from "../lib/json-depth.js";
import { salvageArguments } from "./text/tool-call-json.js";

/**
 * Arguments of a call that ended with the reply: `cut` (the token limit ended it) salvages what was written, as kiln
 * does with its own model's output; otherwise they must parse.
 */
export function readToolArguments(json: string, from: string, cut: boolean): unknown {
  return cut ? salvageArguments(json) : parseToolArguments(json, from);
}

export function parseToolArguments(json: string, from: string): unknown {
  if (json.trim() === "") return {};
  try {
    return parseBoundedJson(json);
  } catch (error) {
    const what = error instanceof JsonTooDeepError ? `nested deeper than ${MAX_JSON_DEPTH} levels` : "not valid JSON";
    throw new EngineError("backend_failure", `${from} returned tool arguments that are ${what}: ${json.slice(0, 200)}`);
  }
}
