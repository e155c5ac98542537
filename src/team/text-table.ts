/** Plain-text tables for the CLI: left-aligned columns two spaces apart, numbers right-aligned. */

/** Renders a header row and data rows; columns whose every data cell is numeric are right-aligned. */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)));
  const numeric = header.map((_, column) => rows.length > 0 && rows.every((row) => /^-?[\d,.]+$/.test(row[column] ?? "")));
  const line = (cells: string[]) =>
    cells.map((cell, column) => (numeric[column] ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!))).join("  ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}
