import { Ajv } from "ajv";
import { getLlama, LlamaCompletion, type Llama, type LlamaModel } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatRequest, ToolSpec } from "../messages.js";
import { SMOLLM2_TEMPLATE } from "./chat-templates.fixture.js";
import { jsonSchemaToGbnf, responseFormatGrammar, toolCallGrammar } from "./grammar.js";
import { renderChatPrompt } from "./render-prompt.js";
import { ToolCallParser, type ParsedPiece } from "./tool-call-parser.js";

const ajv = new Ajv({ strict: false });

/**
 * The shared helper lives outside src/ (tsc's rootDir); a computed specifier keeps tsc from pulling it into
 * the build while vitest resolves it as usual.
 */
const realModelHelper = "../../../test/helpers/real-model.js";

const personSchema = {
  $defs: {
    address: {
      type: "object",
      properties: { city: { type: "string", maxLength: 24 }, zip: { type: ["string", "null"], maxLength: 8 } },
      required: ["city"],
    },
  },
  type: "object",
  properties: {
    name: { type: "string", minLength: 1, maxLength: 24 },
    age: { type: "integer" },
    role: { enum: ["admin", "user", "guest"] },
    tags: { type: "array", items: { type: "string", maxLength: 12 }, maxItems: 3 },
    address: { $ref: "#/$defs/address" },
  },
  required: ["name", "role", "address"],
  additionalProperties: false,
};

/** Shaped like the Bash tool schema Claude Code sends. */
const bashSchema = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: {
    command: { type: "string", description: "The command to execute" },
    timeout: { type: "number", description: "Optional timeout in milliseconds (max 600000)" },
    description: { type: "string", description: "Clear, concise description of what this command does in 5-10 words" },
    run_in_background: { type: "boolean" },
  },
  required: ["command"],
  additionalProperties: false,
};

const choiceSchema = {
  type: "object",
  allOf: [
    { properties: { kind: { const: "answer" } }, required: ["kind"] },
    { properties: { value: { anyOf: [{ type: "integer" }, { type: "string", maxLength: 16 }] }, ok: { type: "boolean", nullable: true } }, required: ["value", "ok"] },
  ],
};

const tools: ToolSpec[] = [
  { name: "Bash", description: "Executes a bash command", inputSchema: bashSchema },
  { name: "get_weather", description: "Current weather", inputSchema: { type: "object", properties: { city: { type: "string", maxLength: 24 } }, required: ["city"] } },
];

let llama: Llama;
let model: LlamaModel;
let completion: LlamaCompletion;

beforeAll(async () => {
  llama = await getLlama({ build: "never", gpu: false });
  const { realModelPath, testThreads } = (await import(realModelHelper)) as { realModelPath: () => string; testThreads: () => number };
  model = await llama.loadModel({ modelPath: realModelPath() });
  const context = await model.createContext({ contextSize: 2048, threads: testThreads() });
  completion = new LlamaCompletion({ contextSequence: context.getSequence() });
});

afterAll(async () => {
  await model?.dispose();
  await llama?.dispose();
});

/** Generates under `grammar` for a one-turn chat; the grammar must have completed (not the token limit). */
async function generate(grammar: string, userText: string, extra: Partial<ChatRequest> = {}): Promise<string> {
  const prompt = renderChatPrompt({ model: "m", maxTokens: 120, system: "You are a helpful assistant.", messages: [{ role: "user", parts: [{ type: "text", text: userText }] }], ...extra }, { source: SMOLLM2_TEMPLATE });
  const llamaGrammar = await llama.createGrammar({ grammar });
  const result = await completion.generateCompletionWithMeta(prompt, { grammar: llamaGrammar, maxTokens: 120, temperature: 0 });
  expect(result.metadata.stopReason, result.response).not.toBe("maxTokens");
  return result.response;
}

function expectValid(schema: object, value: unknown): void {
  const validate = ajv.compile(schema);
  expect(validate(value), `${JSON.stringify(value)} ${ajv.errorsText(validate.errors)}`).toBe(true);
}

/** Reads the one call in `output` with ToolCallParser, fed a character at a time. */
function readCall(output: string): { name: string; input: unknown } {
  const parser = new ToolCallParser({ toolNames: tools.map((tool) => tool.name) });
  const pieces: ParsedPiece[] = [...[...output].flatMap((char) => parser.push(char)), ...parser.end()];
  expect(pieces.map((piece) => piece.kind), output).toEqual(expect.arrayContaining(["call-start", "call-end"]));
  expect(pieces.filter((piece) => piece.kind === "text"), output).toEqual([]);
  const start = pieces.find((piece) => piece.kind === "call-start");
  const end = pieces.find((piece) => piece.kind === "call-end");
  return { name: start?.kind === "call-start" ? start.name : "", input: end?.kind === "call-end" ? end.input : undefined };
}

describe("grammars under the real model", { timeout: 600_000 }, () => {
  it("forces JSON valid for a nested schema with enums, arrays and $defs", async () => {
    const output = await generate(jsonSchemaToGbnf(personSchema), "Describe a person who lives in Paris as JSON.");
    expectValid(personSchema, JSON.parse(output));
  });

  it("forces allOf/anyOf/const/nullable through a json-schema response format", async () => {
    const output = await generate(responseFormatGrammar({ type: "json-schema", schema: choiceSchema })!, "What is 2 + 2? Answer in JSON.");
    expectValid(choiceSchema, JSON.parse(output));
  });

  it("forces a call of the named tool with arguments valid for a Claude-Code-like schema", async () => {
    const grammar = toolCallGrammar(tools, { type: "tool", name: "Bash" })!;
    const call = readCall(await generate(grammar, "List the files in the current directory.", { tools }));
    expect(call.name).toBe("Bash");
    expectValid(bashSchema, call.input);
  });

  it("forces one call of any offered tool for tool choice required", async () => {
    const grammar = toolCallGrammar(tools, { type: "required" })!;
    const call = readCall(await generate(grammar, "What is the weather in Paris?", { tools, toolChoice: { type: "required" } }));
    expectValid(tools.find((tool) => tool.name === call.name)!.inputSchema, call.input);
  });
});
