/**
 * Valid requests for every endpoint of both surfaces, the seeds the hostile run mutates. Generations are kept
 * tiny (the server also runs with --max-output-tokens) so the valid ones stay cheap.
 */

/** A request before mutation: method, path and a JSON body for POST routes. */
export interface BaseRequest {
  name: string;
  method: "GET" | "POST";
  path: string;
  body?: Record<string, unknown>;
}

const weather = { type: "object", properties: { city: { type: "string" }, days: { type: "integer", minimum: 1 } }, required: ["city"] };

/** The seeds, for the model the server serves. */
export function baseRequests(model: string): BaseRequest[] {
  const user = { role: "user", content: "Hi" };
  return [
    { name: "messages", method: "POST", path: "/v1/messages", body: { model, max_tokens: 2, messages: [user] } },
    {
      name: "messages-rich", method: "POST", path: "/v1/messages",
      body: {
        model, max_tokens: 2, system: [{ type: "text", text: "Be brief." }], temperature: 0.5, top_p: 0.9, top_k: 20, stop_sequences: ["\n\n"],
        metadata: { user_id: "u1" },
        tools: [{ name: "get_weather", description: "Weather", input_schema: weather }],
        tool_choice: { type: "auto" },
        messages: [
          { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] },
          { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } }] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "Sunny" }] }] },
        ],
      },
    },
    { name: "messages-stream", method: "POST", path: "/v1/messages", body: { model, max_tokens: 2, stream: true, messages: [user] } },
    {
      name: "count-tokens", method: "POST", path: "/v1/messages/count_tokens",
      body: { model, system: "Be brief.", tools: [{ name: "get_weather", input_schema: weather }], messages: [user, { role: "assistant", content: "Hello" }, user] },
    },
    {
      name: "chat", method: "POST", path: "/v1/chat/completions",
      body: {
        model, max_tokens: 2, messages: [{ role: "system", content: "Be brief." }, user], temperature: 0.7, top_p: 1, n: 1, seed: 7,
        stop: ["\n"], presence_penalty: 0, frequency_penalty: 0, logit_bias: { "1": 0 }, logprobs: false, user: "u1",
      },
    },
    {
      name: "chat-tools", method: "POST", path: "/v1/chat/completions",
      body: {
        model, max_completion_tokens: 2, messages: [user, { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } }] }, { role: "tool", tool_call_id: "call_1", content: "Sunny" }],
        tools: [{ type: "function", function: { name: "get_weather", description: "Weather", parameters: weather } }], tool_choice: "auto", parallel_tool_calls: false,
      },
    },
    {
      name: "chat-stream", method: "POST", path: "/v1/chat/completions",
      body: { model, max_tokens: 2, stream: true, stream_options: { include_usage: true }, messages: [user], response_format: { type: "json_object" } },
    },
    { name: "completions", method: "POST", path: "/v1/completions", body: { model, prompt: "Once upon a time", max_tokens: 2, temperature: 0, stop: ["."], echo: false } },
    { name: "completions-stream", method: "POST", path: "/v1/completions", body: { model, prompt: ["Hello"], max_tokens: 2, stream: true } },
    { name: "responses", method: "POST", path: "/v1/responses", body: { model, input: "Hi", max_output_tokens: 16, instructions: "Be brief.", store: false } },
    {
      name: "responses-items", method: "POST", path: "/v1/responses",
      body: {
        model, max_output_tokens: 16, stream: true,
        input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "Hi" }] }],
        tools: [{ type: "function", name: "get_weather", parameters: weather }],
        text: { format: { type: "json_schema", name: "w", schema: weather } },
      },
    },
    { name: "models", method: "GET", path: "/v1/models" },
    { name: "model", method: "GET", path: `/v1/models/${model}` },
  ];
}
