/** What `kiln launch` needs to know about a model file before serving it to an agent. */
import { describeGguf } from "../gguf/describe-gguf.js";
import { readGgufHeader } from "../gguf/read-gguf-header.js";

/** A model's trained context and whether its chat template can present tools to it. */
export interface LaunchFacts {
  contextLength: number | null;
  /** The chat template renders a `tools` list: the model was trained to call tools. */
  tools: boolean;
}

/** Reads the facts from the GGUF header of `path`. */
export async function readLaunchFacts(path: string): Promise<LaunchFacts> {
  const header = await readGgufHeader(path);
  const template = header.metadata["tokenizer.chat_template"];
  return { contextLength: describeGguf(header).contextLength, tools: typeof template === "string" && template.includes("tools") };
}
