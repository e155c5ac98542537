import type { Command } from "commander";

/** Registers `kiln run`. (Placeholder until the command lands.) */
export function registerRun(program: Command): void {
  program.command("run").description("not available yet").action(() => {
    throw new Error("kiln run is not available yet");
  });
}
