// Figures a fault test records (how many changes, kills, events checked, medians …), appended
// as JSON lines to TEST_FIGURES_FILE and printed as one table when the fault run ends.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';

export function recordFigure(suite: string, figure: string, value: number | string): void {
  const file = process.env.TEST_FIGURES_FILE;
  if (!file) return;
  appendFileSync(file, `${JSON.stringify({ suite, figure, value })}\n`);
}

export function printFigures(file: string): void {
  if (!existsSync(file)) return;
  const rows = readFileSync(file, 'utf8').trim().split('\n').filter(Boolean)
    .map((line) => JSON.parse(line) as { suite: string; figure: string; value: number | string });
  if (rows.length === 0) return;
  const width = Math.max(...rows.map((r) => `${r.suite} / ${r.figure}`.length));
  console.log('\n# Fault suite figures');
  for (const row of rows) console.log(`# ${`${row.suite} / ${row.figure}`.padEnd(width)}  ${row.value}`);
}
