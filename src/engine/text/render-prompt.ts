/**
 * Renders a ChatRequest into the prompt text with the model's own Jinja chat template (the GGUF's
 * `tokenizer.chat_template`), so every backend tokenizes the same text and prefix caching can match across turns.
 */
import { Template } from "@huggingface/jinja";
import { EngineError } from "../../errors/engine-error.js";
import type { ChatRequest } from "../messages.js";
import { toTemplateMessages } from "./template-messages.js";
import { describeTools, toFunctionSpec } from "./tool-prompt.js";
import { thinkingSwitch } from "./reasoning-template.js";

/** The model's chat template and the special tokens it may reference. */
export interface PromptTemplate {
  /** Jinja source of `tokenizer.chat_template`; absent → ChatML. */
  source?: string;
  /** Text of the model's BOS token, exposed to the template as `bos_token`. */
  bosToken?: string;
  /** Text of the model's EOS token, exposed to the template as `eos_token`. */
  eosToken?: string;
}

/** The fallback when a model ships no template (or one the Jinja engine cannot parse). */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const compiled = new Map<string, Template>();

/** A conversation ready for its template: the template source that compiles, and what the template sees. */
export interface PreparedPrompt {
  source: string;
  context: Record<string, unknown>;
  /** Text after the rendered template: the final assistant message, which generation continues. */
  prefill: string;
  /** Template messages plus tools: how much work rendering is. */
  items: number;
}

/**
 * The whole conversation as prompt text, ending with the generation prompt. A final assistant message is a
 * prefill: the prompt ends with its text, so generation continues it. Deterministic: a conversation that grows
 * by whole messages renders to a string that extends the previous rendering.
 */
export function renderChatPrompt(request: ChatRequest, template: PromptTemplate, quote?: (text: string) => string): string {
  return renderPrepared(prepareChatPrompt(request, template, quote));
}

/**
 * Everything before running the template. `quote` is applied to every string the client supplied (message and
 * system text, tool calls and results, tool schemas) before the template sees it.
 */
export function prepareChatPrompt(request: ChatRequest, template: PromptTemplate, quote: (text: string) => string = (text) => text): PreparedPrompt {
  const { source } = compileTemplate(template.source);
  const tools = request.toolChoice?.type === "none" ? [] : (request.tools ?? []);
  const templateHandlesTools = source.includes("tools");
  const messages = toTemplateMessages(request, {
    toolsText: tools.length > 0 && !templateHandlesTools ? describeTools(tools, request.toolChoice) : undefined,
    toolRole: /["']tool["']/.test(source),
  });
  for (const message of messages) message.content = quote(message.content);
  const prefill = request.messages.at(-1)?.role === "assistant" ? messages.pop() : undefined;
  const context: Record<string, unknown> = {
    messages,
    add_generation_prompt: true,
    bos_token: template.bosToken ?? "",
    eos_token: template.eosToken ?? "",
  };
  const thinkingVariable = thinkingSwitch(source);
  if (thinkingVariable && request.thinking !== undefined) context[thinkingVariable] = request.thinking;
  // Quoting the JSON text quotes every key and string of the schemas at once; escapes are valid inside JSON strings.
  if (tools.length > 0 && templateHandlesTools) context.tools = JSON.parse(quote(JSON.stringify(tools.map(toFunctionSpec))));
  return { source, context, prefill: prefill?.content ?? "", items: messages.length + tools.length };
}

/** Runs a prepared prompt's template in place. */
export function renderPrepared(prepared: PreparedPrompt): string {
  return renderTemplate(compileTemplate(prepared.source).compiledTemplate, prepared.context) + prepared.prefill;
}

/** A template's refusal of a conversation (raise_exception) is the request's fault. */
export function templateRejected(reason: string): EngineError {
  return new EngineError("invalid_request", `The model's chat template rejected the conversation: ${reason}`, { param: "messages" });
}

/** Compiles (once per source) the template, falling back to ChatML when there is none or it does not parse. */
function compileTemplate(source: string | undefined): { source: string; compiledTemplate: Template } {
  const candidates = source ? [source, CHATML_TEMPLATE] : [CHATML_TEMPLATE];
  for (const candidate of candidates) {
    const cached = compiled.get(candidate);
    if (cached) return { source: candidate, compiledTemplate: cached };
    try {
      const compiledTemplate = new Template(candidate);
      compiled.set(candidate, compiledTemplate);
      return { source: candidate, compiledTemplate };
    } catch {
      // An unparsable model template must not make the model unusable: ChatML is the next candidate.
    }
  }
  throw new EngineError("internal", "The built-in chat template does not compile");
}

/** Runs the template; a template that rejects the conversation (raise_exception) is the request's fault. */
function renderTemplate(template: Template, context: Record<string, unknown>): string {
  try {
    return template.render(context);
  } catch (error) {
    throw templateRejected(error instanceof Error ? error.message : String(error));
  }
}
