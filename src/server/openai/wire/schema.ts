/**
 * The field schemas chat completions, completions and the Responses API share, and the one validator that turns
 * the first problem into a 400 naming the field. Lenient by design: `v.object` drops unknown keys instead of
 * rejecting them, because clients send vendor extras (cache_control, prompt_cache_key, …).
 */
import * as v from "valibot";
import { EngineError } from "../../../engine/index.js";

/** A number within [min, max], named in the message so the 400 says what is allowed. */
export function rangeSchema(min: number, max: number, integer = false) {
  const message = `Expected a ${integer ? "whole number" : "number"} from ${min} to ${max}`;
  return integer
    ? v.pipe(v.number(), v.integer(message), v.minValue(min, message), v.maxValue(max, message))
    : v.pipe(v.number(), v.minValue(min, message), v.maxValue(max, message));
}

/**
 * `seed`: a signed 64-bit integer, as OpenAI and vLLM declare it, read as a number. Where a double cannot tell
 * (±2^63), the body reader hands over the exact digits as a BigInt (read-json-body.ts).
 */
export function seedSchema() {
  const message = "Expected a signed 64-bit integer (from -9223372036854775808 to 9223372036854775807)";
  const inRange = (seed: number | bigint) => typeof seed === "bigint" ? BigInt.asIntN(64, seed) === seed : seed >= -(2 ** 63) && seed < 2 ** 63;
  return v.pipe(
    v.union([v.pipe(v.number(), v.integer("Expected a whole number")), v.bigint()], "Expected a whole number"),
    v.check(inRange, message),
    v.transform(Number),
  );
}

/** Most choices (`n`) one request may ask for: they are generated one after another. */
export const MAX_CHOICES = 16;

/** A positive whole number (token limits). */
export const positiveIntSchema = v.pipe(v.number(), v.integer("Expected a whole number"), v.minValue(1, "Expected at least 1"));

/** `stop`: a string or any number of strings (Continue sends 9–14; OpenAI's limit of 4 is not enforced). */
export const stopSchema = v.nullish(v.union([v.string(), v.array(v.string())]));

/** Every `reasoning_effort` an OpenAI SDK may send (chat's field, the Responses API's `reasoning.effort`). */
const REASONING_EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh", "max"] as const;
export const reasoningEffortSchema = v.nullish(v.picklist(REASONING_EFFORTS, `Expected one of ${REASONING_EFFORTS.join(", ")}`));

/** Sampling fields common to chat and legacy completions. */
export const samplingFields = {
  temperature: v.nullish(rangeSchema(0, 2)),
  top_p: v.nullish(rangeSchema(0, 1)),
  seed: v.nullish(seedSchema()),
  logit_bias: v.nullish(v.record(v.pipe(v.string(), v.regex(/^\d+$/, "Expected token ids as keys")), rangeSchema(-100, 100))),
  presence_penalty: v.nullish(rangeSchema(-2, 2)),
  frequency_penalty: v.nullish(rangeSchema(-2, 2)),
  ignore_eos: v.nullish(v.boolean()),
  stop: stopSchema,
  stream: v.nullish(v.boolean()),
  stream_options: v.nullish(v.object({ include_usage: v.nullish(v.boolean()) })),
  n: v.nullish(rangeSchema(1, MAX_CHOICES, true)),
};

/**
 * Validates a body (or a part of one at `prefix`, e.g. "input.3"); the first problem becomes a 400 whose `param`
 * is the field's dot path.
 */
export function parseBody<S extends v.GenericSchema>(schema: S, body: unknown, prefix?: string): v.InferOutput<S> {
  const result = v.safeParse(schema, body);
  if (result.success) return result.output;
  const issue = deepestIssue(result.issues[0]);
  const path = v.getDotPath(issue);
  const param = [prefix, path].filter(Boolean).join(".") || undefined;
  const message = param ? `Invalid '${param}': ${issue.message}` : `Invalid request body: ${issue.message}`;
  throw new EngineError("invalid_request", message, param ? { param } : {});
}

/** Union issues wrap the branch issues; the innermost one names the precise field. */
function deepestIssue(issue: v.BaseIssue<unknown>): v.BaseIssue<unknown> {
  let current = issue;
  while (current.issues?.length) {
    const deeper = current.issues.find((inner) => (inner.path?.length ?? 0) > (current.path?.length ?? 0));
    if (!deeper) break;
    current = deeper;
  }
  return current;
}
