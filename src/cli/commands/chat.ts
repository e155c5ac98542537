import type { Command } from "commander";

/** Registers `kiln chat`. (Placeholder until the command lands.) */
export function registerChat(program: Command): void {
  program.command("chat").description("not available yet").action(() => {
    throw new Error("kiln chat is not available yet");
  });
}
