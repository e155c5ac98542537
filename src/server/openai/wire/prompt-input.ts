/**
 * The input shape legacy completions (`prompt`) and embeddings (`input`) share: a string, strings, token ids, or
 * lists of token ids. Each item is one prompt, or one text to embed.
 */
import * as v from "valibot";

const tokenIdsSchema = v.pipe(v.array(v.pipe(v.number(), v.integer())), v.minLength(1, "Expected at least one token id"));

export const promptInputSchema = v.union([
  v.string(),
  v.pipe(v.array(v.string()), v.minLength(1, "Expected at least one item")),
  tokenIdsSchema,
  v.pipe(v.array(tokenIdsSchema), v.minLength(1, "Expected at least one item")),
], "Expected a string, an array of strings, an array of token ids or an array of such arrays");

/** The items of an input: one string or token-id list, or a list of them. */
export function toPromptItems(input: v.InferOutput<typeof promptInputSchema>): Array<string | number[]> {
  if (typeof input === "string") return [input];
  if (input.every((item) => typeof item === "number")) return [input as number[]];
  return input as Array<string | number[]>;
}
