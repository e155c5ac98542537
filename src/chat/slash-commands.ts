/** The chat's slash commands: their names, help text, parsing and Tab completion. Pure. */

/** A slash command the chat understands. */
export interface SlashCommand {
  name: string;
  /** Argument placeholder for help, e.g. "<text>"; empty when the command takes none. */
  args: string;
  description: string;
}

export const SLASH_COMMANDS: readonly SlashCommand[] = [
  { name: "help", args: "", description: "list commands and keys" },
  { name: "system", args: "<text>", description: "set the system prompt (empty to clear it)" },
  { name: "temperature", args: "<x>", description: "set the sampling temperature (0 to 2)" },
  { name: "model", args: "<ref>", description: "switch to another model" },
  { name: "clear", args: "", description: "start a new conversation" },
  { name: "save", args: "<file>", description: "save the conversation as JSON (load it with --load)" },
  { name: "retry", args: "", description: "generate the last reply again" },
  { name: "exit", args: "", description: "leave the chat" },
];

/** Keys shown by /help and (shortened) under the input. */
export const KEY_HELP = [
  "Enter send · Alt+Enter or Ctrl+J new line · Esc stop the reply",
  "Up/Down earlier inputs · Tab complete a command · Ctrl+C twice exit",
];

/** A typed command line split into its name (without the slash) and the rest. */
export function parseSlashCommand(line: string): { name: string; arg: string } | undefined {
  const match = /^\/(\S*)\s*([\s\S]*)$/.exec(line.trim());
  return match ? { name: match[1]!.toLowerCase(), arg: match[2]!.trim() } : undefined;
}

/** Commands whose name starts with what is typed after the slash (only while the name is being typed). */
export function matchSlashCommands(line: string): SlashCommand[] {
  const match = /^\/(\S*)$/.exec(line);
  if (!match) return [];
  const typed = match[1]!.toLowerCase();
  return SLASH_COMMANDS.filter((command) => command.name.startsWith(typed));
}

/**
 * Tab completion: one match completes the name (with a trailing space when it takes an argument); several
 * complete their common prefix. Returns undefined when nothing changes.
 */
export function completeSlashCommand(line: string): string | undefined {
  const matches = matchSlashCommands(line);
  if (matches.length === 0) return undefined;
  if (matches.length === 1) {
    const [only] = matches as [SlashCommand];
    const completed = `/${only.name}${only.args ? " " : ""}`;
    return completed === line ? undefined : completed;
  }
  const prefix = `/${commonPrefix(matches.map((command) => command.name))}`;
  return prefix.length > line.length ? prefix : undefined;
}

/** The /help text: one line per command, then the keys. */
export function formatHelp(): string {
  const width = Math.max(...SLASH_COMMANDS.map((command) => `/${command.name} ${command.args}`.length));
  const lines = SLASH_COMMANDS.map((command) => `${`/${command.name} ${command.args}`.padEnd(width)}  ${command.description}`);
  return [...lines, ...KEY_HELP].join("\n");
}

function commonPrefix(words: string[]): string {
  return words.reduce((prefix, word) => {
    let length = 0;
    while (length < prefix.length && prefix[length] === word[length]) length++;
    return prefix.slice(0, length);
  });
}
