/** Generated tokens' logprobs as chat completions and the Responses API write them. */
import type { TokenLogprob } from "../../../engine/index.js";

/** One token's logprob as chat completions write it (https://platform.openai.com/docs/api-reference/chat/object). */
export interface ChatTokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: Array<{ token: string; logprob: number; bytes: number[] }>;
}

/** A choice's `logprobs`: its content tokens (kiln never refuses, so `refusal` is null). */
export interface ChatLogprobs { content: ChatTokenLogprob[]; refusal: null }

/** Chat logprobs of generated tokens, with each token's UTF-8 bytes as OpenAI gives them. */
export function toChatLogprobs(tokens: TokenLogprob[]): ChatLogprobs {
  const bytes = (token: string) => [...new TextEncoder().encode(token)];
  return {
    content: tokens.map((token) => ({
      token: token.token,
      logprob: token.logprob,
      bytes: bytes(token.token),
      top_logprobs: token.top.map((top) => ({ token: top.token, logprob: top.logprob, bytes: bytes(top.token) })),
    })),
    refusal: null,
  };
}
