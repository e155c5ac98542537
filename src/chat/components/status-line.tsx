/** The status line: model, decode speed, context used / context size, and what the chat is doing. */
import { Box, Text } from "ink";
import type { ChatState } from "../chat-state.js";

export function StatusLine({ state }: { state: ChatState }) {
  const speed = state.tokensPerSecond === undefined ? "– tok/s" : `${state.tokensPerSecond.toFixed(1)} tok/s`;
  const context = `ctx ${state.contextUsed ?? 0}/${state.contextSize ?? "?"}`;
  const activity = state.flash ?? state.loading ?? (state.generation ? "generating… (Esc stops)" : "");
  return (
    <Box paddingX={1}>
      <Text color="green">{state.settings.model}</Text>
      <Text dimColor>{`  ·  ${speed}  ·  ${context}`}</Text>
      {activity !== "" && <Text color="yellow">{`  ·  ${activity}`}</Text>}
    </Box>
  );
}
