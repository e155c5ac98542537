/** The multi-line input with its cursor, command suggestions and the key hint. */
import { Box, Text } from "ink";
import type { InputBuffer } from "../input-buffer.js";
import { matchSlashCommands } from "../slash-commands.js";

export function InputBox({ input, busy }: { input: InputBuffer; busy: boolean }) {
  const before = input.text.slice(0, input.cursor);
  const under = input.text.slice(input.cursor, input.cursor + 1);
  const after = input.text.slice(input.cursor + 1);
  // At a line end the cursor sits on a space, so the newline itself still breaks the line.
  const cursor = under === "" || under === "\n" ? " " : under;
  const suggestions = matchSlashCommands(input.text);
  const width = Math.max(0, ...suggestions.map((command) => `/${command.name} ${command.args}`.length));
  return (
    <Box flexDirection="column" marginTop={1}>
      <Box borderStyle="round" borderColor={busy ? "gray" : "cyan"} paddingX={1}>
        <Text>
          {before}
          <Text inverse>{cursor}</Text>
          {under === "\n" ? "\n" : ""}
          {after}
        </Text>
      </Box>
      {suggestions.length > 0 && input.text.length > 0 && (
        <Box flexDirection="column" paddingX={2}>
          {suggestions.map((command) => (
            <Text key={command.name} color="gray">
              {`/${command.name} ${command.args}`.padEnd(width)}  <Text dimColor>{command.description}</Text>
            </Text>
          ))}
        </Box>
      )}
      <Text dimColor>  Enter send · Alt+Enter/Ctrl+J newline · Esc stop · ↑↓ history · Tab complete · /help</Text>
    </Box>
  );
}
