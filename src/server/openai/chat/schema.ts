/**
 * Wire schema of POST /v1/chat/completions (https://platform.openai.com/docs/api-reference/chat/create): messages,
 * content parts, tools and response_format; the sampling fields are shared (../wire/schema.ts).
 */
import * as v from "valibot";
import { positiveIntSchema, rangeSchema, reasoningEffortSchema, samplingFields } from "../wire/schema.js";

const textPartSchema = v.object({ type: v.literal("text"), text: v.string() });
const imagePartSchema = v.object({
  type: v.literal("image_url"),
  image_url: v.union([v.string(), v.object({ url: v.string(), detail: v.nullish(v.string()) })]),
});
const refusalPartSchema = v.object({ type: v.literal("refusal"), refusal: v.string() });

/** Content as a string or typed parts; null allowed where OpenAI allows it (assistant). */
const contentSchema = v.union([v.string(), v.array(v.variant("type", [textPartSchema, imagePartSchema, refusalPartSchema]))]);

const toolCallSchema = v.object({
  id: v.string(),
  type: v.nullish(v.literal("function")),
  function: v.object({ name: v.string(), arguments: v.nullish(v.string()) }),
});

const messageSchema = v.variant("role", [
  v.object({ role: v.literal("system"), content: contentSchema }),
  v.object({ role: v.literal("developer"), content: contentSchema }),
  v.object({ role: v.literal("user"), content: contentSchema }),
  v.object({
    role: v.literal("assistant"),
    content: v.nullish(contentSchema),
    tool_calls: v.nullish(v.array(toolCallSchema)),
    reasoning_content: v.nullish(v.string()),
    reasoning: v.nullish(v.string()),
  }),
  v.object({ role: v.literal("tool"), content: contentSchema, tool_call_id: v.string() }),
]);

/** `response_format`: text | json_object | json_schema (https://platform.openai.com/docs/guides/structured-outputs). */
export const responseFormatSchema = v.nullish(v.variant("type", [
  v.object({ type: v.literal("text") }),
  v.object({ type: v.literal("json_object") }),
  v.object({
    type: v.literal("json_schema"),
    json_schema: v.object({
      name: v.nullish(v.string()),
      description: v.nullish(v.string()),
      schema: v.nullish(v.record(v.string(), v.unknown())),
      strict: v.nullish(v.boolean()),
    }),
  }),
]));

const toolNameSchema = v.pipe(v.string(), v.regex(/^[a-zA-Z0-9_.:-]{1,64}$/, "Expected a name of 1–64 letters, digits, '_' or '-'"));

const toolSchema = v.object({
  type: v.literal("function"),
  function: v.object({
    name: toolNameSchema,
    description: v.nullish(v.string()),
    parameters: v.nullish(v.record(v.string(), v.unknown())),
    strict: v.nullish(v.boolean()),
  }),
});

const toolChoiceSchema = v.nullish(v.union([
  v.picklist(["none", "auto", "required"]),
  v.object({ type: v.literal("function"), function: v.object({ name: v.string() }) }),
]));

/** The body of POST /v1/chat/completions. */
export const chatCompletionRequestSchema = v.object({
  model: v.pipe(v.string(), v.minLength(1, "Expected a model id")),
  messages: v.pipe(v.array(messageSchema), v.minLength(1, "Expected at least one message")),
  max_tokens: v.nullish(positiveIntSchema),
  max_completion_tokens: v.nullish(positiveIntSchema),
  ...samplingFields,
  logprobs: v.nullish(v.boolean()),
  top_logprobs: v.nullish(rangeSchema(0, 20, true)),
  response_format: responseFormatSchema,
  tools: v.nullish(v.array(toolSchema)),
  tool_choice: toolChoiceSchema,
  parallel_tool_calls: v.nullish(v.boolean()),
  reasoning_effort: reasoningEffortSchema,
});

export type ChatCompletionRequestBody = v.InferOutput<typeof chatCompletionRequestSchema>;
export type ChatMessageBody = v.InferOutput<typeof messageSchema>;
export type ChatContentBody = v.InferOutput<typeof contentSchema>;
