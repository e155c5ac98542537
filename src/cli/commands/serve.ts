import type { Command } from "commander";

/** Registers `kiln serve`. (Placeholder until the command lands.) */
export function registerServe(program: Command): void {
  program.command("serve").description("not available yet").action(() => {
    throw new Error("kiln serve is not available yet");
  });
}
