/**
 * A minimal OpenAI chat-completions streaming client that timestamps every content chunk. The same client measures
 * kiln and llama-server, so both pay the same HTTP and parsing costs.
 */

/** @typedef {{ role: string, content: string }} ChatMessage */

/**
 * @typedef StreamTiming
 * @property {number} ttftMs time from sending the request to the first content chunk
 * @property {number[]} chunkTimesMs arrival time of every content chunk, relative to the request
 * @property {number} completionTokens usage.completion_tokens, else the number of content chunks
 * @property {number|undefined} promptTokens usage.prompt_tokens
 * @property {number|undefined} cachedTokens usage.prompt_tokens_details.cached_tokens (or llama-server's timings.cache_n)
 * @property {string} text the generated text
 * @property {object|undefined} serverTimings llama-server's own `timings` object, when sent
 * @property {object|undefined} usage the final usage object as sent
 * @property {boolean} retried sent a second time after the server closed its kept-alive connection
 */

/** Reads a fetch body as SSE `data:` payloads. */
export async function* readSseData(body) {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let cut;
    while ((cut = buffer.search(/\r?\n\r?\n/)) !== -1) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
      const data = event.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
      if (data) yield data;
    }
  }
}

/**
 * Sends one streaming chat completion and times it.
 * @param {string} baseUrl
 * @param {{ model: string, messages: ChatMessage[], maxTokens: number, extra?: object, timeoutMs: number }} request
 * @returns {Promise<StreamTiming>}
 */
export async function streamChat(baseUrl, { model, messages, maxTokens, extra = {}, timeoutMs }) {
  const body = {
    model, messages, max_tokens: maxTokens, temperature: 0, stream: true, stream_options: { include_usage: true }, ...extra,
  };
  const started = performance.now();
  const send = () => fetch(`${baseUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  // A server that closes a kept-alive connection as the next request arrives (llama-server's HTTP library does, for
  // about 1% of requests under load) fails the request before any response. Like the official SDKs (two retries by
  // default), send it again; the time lost stays in this request's figures and the retry is counted. Twice: when the
  // server closes every idle connection of a pool at once, the first retry can pick another closed one.
  let retried = false;
  let res;
  for (let attempt = 0; !res; attempt++) {
    try {
      res = await send();
    } catch (error) {
      if (error?.cause?.code !== "UND_ERR_SOCKET" || attempt === 2) throw error;
      retried = true;
    }
  }
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status} from ${baseUrl}: ${(await res.text()).slice(0, 500)}`);
  const chunkTimesMs = [];
  let text = "";
  let usage;
  let serverTimings;
  for await (const data of readSseData(res.body)) {
    if (data === "[DONE]") break;
    const json = JSON.parse(data);
    if (json.error) throw new Error(`stream error from ${baseUrl}: ${JSON.stringify(json.error).slice(0, 300)}`);
    const delta = json.choices?.[0]?.delta;
    const piece = (delta?.content ?? "") + (delta?.reasoning_content ?? "");
    if (piece) {
      chunkTimesMs.push(performance.now() - started);
      text += piece;
    }
    if (json.usage) usage = json.usage;
    if (json.timings) serverTimings = json.timings;
  }
  return {
    ttftMs: chunkTimesMs[0] ?? Number.NaN,
    chunkTimesMs,
    completionTokens: usage?.completion_tokens ?? chunkTimesMs.length,
    promptTokens: usage?.prompt_tokens,
    cachedTokens: usage?.prompt_tokens_details?.cached_tokens ?? serverTimings?.cache_n,
    text,
    serverTimings,
    usage,
    retried,
  };
}

/** Generation rate after the first token: (tokens − 1) ÷ (last chunk − first chunk). */
export function generationRate(timing) {
  const n = timing.completionTokens;
  const span = (timing.chunkTimesMs.at(-1) ?? 0) - timing.ttftMs;
  return n > 1 && span > 0 ? ((n - 1) * 1000) / span : Number.NaN;
}

/** Gaps between consecutive content chunks (inter-token latency samples), in ms. */
export function interTokenGaps(timing) {
  const t = timing.chunkTimesMs;
  return t.slice(1).map((v, i) => v - t[i]);
}
