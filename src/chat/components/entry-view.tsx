/** One transcript entry: a user turn, a reply (streaming, stopped, failed) or a notice. */
import { Box, Text } from "ink";
import type { Entry } from "../conversation.js";
import { tailLines } from "../tail-lines.js";

/** Where the entry may only take part of the screen (a streaming reply): the rows and columns it may use. */
export interface EntryBounds {
  rows: number;
  columns: number;
}

export function EntryView({ entry, bounds }: { entry: Entry; bounds?: EntryBounds }) {
  switch (entry.kind) {
    case "user":
      return (
        <Box marginTop={1}>
          <Text color="cyan" bold>{"you › "}</Text>
          <Text>{entry.text}</Text>
        </Box>
      );
    case "notice":
      return <Text color={entry.tone === "error" ? "red" : "gray"}>{entry.text}</Text>;
    case "assistant":
      return <ReplyView entry={entry} bounds={bounds} />;
  }
}

function ReplyView({ entry, bounds }: { entry: Extract<Entry, { kind: "assistant" }>; bounds?: EntryBounds }) {
  const fit = (text: string, rows: number) => (bounds ? tailLines(text, bounds.columns, rows) : text);
  // While streaming, reasoning gets at most a third of the rows and the reply the rest.
  const reasoning = fit(entry.reasoning, bounds ? Math.floor(bounds.rows / 3) : 0);
  const reasoningRows = reasoning === "" ? 0 : reasoning.split("\n").length;
  return (
    <Box flexDirection="column">
      {reasoning !== "" && <Text dimColor italic>{reasoning}</Text>}
      <Text>
        {fit(entry.text, Math.max(1, (bounds?.rows ?? 0) - reasoningRows))}
        {entry.status === "waiting" && <Text dimColor>…</Text>}
        {entry.status === "streaming" && <Text dimColor>▍</Text>}
        {entry.status === "stopped" && <Text color="yellow"> [stopped]</Text>}
        {entry.truncated && <Text color="yellow"> [max tokens]</Text>}
      </Text>
      {entry.status === "error" && <Text color="red">error: {entry.error}</Text>}
    </Box>
  );
}
