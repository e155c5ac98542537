import type { Command } from "commander";

/** Registers `kiln models`. (Placeholder until the command lands.) */
export function registerModels(program: Command): void {
  program.command("models").description("not available yet").action(() => {
    throw new Error("kiln models is not available yet");
  });
}
