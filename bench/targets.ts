// The bench's targets, each by name, and the verdict on one run's figures. A target divides a figure
// by another measured in the same run (the endpoint's twin, R2, POST /v1/key's twin, the fresh
// project), so that a slow machine slows both sides alike; only memory has an absolute bound.
// To add a row: a target here (or reuse one) and a Check for it in run.ts; an endpoint gets its
// targets from its kind (ENDPOINT_TARGETS).

/**
 * What a target divides its figure by, as the table names it. The event parts' changes are
 * POST /v1/key, so that endpoint's twin's p99 (32 connections) sets their pace on the machine measured.
 */
export type Reference = 'twin' | 'R2' | 'POST /v1/key twin' | 'fresh project' | 'unlimited key' | 'webhook twin';

export type Unit = 'req/s' | 'ms' | 'MB' | '/s';

/** A bound on the ratio figure / reference, or on the figure itself when there is no reference. */
export type Target = { unit: Unit; against?: Reference } & ({ atLeast: number; atMost?: never } | { atMost: number; atLeast?: never });

export const TARGETS = {
  currentThroughput: { unit: 'req/s', against: 'R2', atLeast: 0.8 },
  readThroughput: { unit: 'req/s', against: 'twin', atLeast: 0.6 },
  writeThroughput: { unit: 'req/s', against: 'twin', atLeast: 0.4 },
  readP99: { unit: 'ms', against: 'twin', atMost: 1.2 },
  writeP99: { unit: 'ms', against: 'twin', atMost: 1.3 },
  /** From a change's response until GET /v1/event/<id> answers. */
  eventVisibilityP99: { unit: 'ms', against: 'POST /v1/key twin', atMost: 1.5 },
  /** From a change's response until its event reaches each of the open streams. */
  streamDeliveryP99: { unit: 'ms', against: 'POST /v1/key twin', atMost: 3 },
  /** A read on the bulk-loaded project against the same read on a fresh one. */
  scaleP99: { unit: 'ms', against: 'fresh project', atMost: 1.25 },
  /** GET /v1/key/current with a key under a rate limit it never reaches, against an unlimited key's runs beside it. */
  limitedKeyThroughput: { unit: 'req/s', against: 'unlimited key', atLeast: 0.9 },
  webPeakRss: { unit: 'MB', atMost: 300 },
  /** From a change's response until its event reaches each webhook endpoint (decisions' bound, not a ratio). */
  webhookDeliveryP99: { unit: 'ms', atMost: 250 },
  workerPeakRss: { unit: 'MB', atMost: 300 },
  /** One endpoint's deliveries a second on a backlog, against a bare deliverer with its connections. */
  webhookCeiling: { unit: '/s', against: 'webhook twin', atLeast: 0.5 },
  streamsWebRss: { unit: 'MB', atMost: 400 },
} as const satisfies Record<string, Target>;

export type TargetName = keyof typeof TARGETS;

/** The targets each kind of endpoint is held to: its throughput, and its p99. */
export const ENDPOINT_TARGETS = {
  current: { throughput: 'currentThroughput', p99: 'readP99' },
  read: { throughput: 'readThroughput', p99: 'readP99' },
  write: { throughput: 'writeThroughput', p99: 'writeP99' },
} as const satisfies Record<string, { throughput: TargetName; p99: TargetName }>;

/** One row to judge: a figure of this run, and the reference's figure from the same run. */
export interface Check {
  row: string;
  target: TargetName;
  figure: number;
  /** Required when the target has a reference; a missing, zero or NaN one misses the target. */
  reference?: number;
}

export interface Judged extends Check {
  /** figure / reference; undefined for an absolute bound. */
  ratio?: number;
  met: boolean;
}

export function judge(checks: readonly Check[]): Judged[] {
  return checks.map((check) => {
    const target: Target = TARGETS[check.target];
    const ratio = target.against ? check.figure / (check.reference || NaN) : undefined;
    const value = ratio ?? check.figure;
    // NaN compares false either way: a figure that was not measured misses.
    const met = target.atLeast !== undefined ? value >= target.atLeast : value <= target.atMost;
    return { ...check, ...(ratio === undefined ? {} : { ratio }), met };
  });
}

/** The run's exit code: 1 when a target is missed or a measurement went wrong (an error, a lost event). */
export function exitCode(judged: readonly Judged[], problems: readonly string[]): number {
  return judged.some((j) => !j.met) || problems.length > 0 ? 1 : 0;
}

function targetText(name: TargetName): string {
  const target: Target = TARGETS[name];
  const bound = target.atLeast !== undefined ? `at least ${target.atLeast}` : `at most ${target.atMost}`;
  return `${bound}${target.against ? `x ${target.against}` : ` ${target.unit}`} (${name})`;
}

function figureText(value: number | undefined, unit: Unit): string {
  if (value === undefined || Number.isNaN(value)) return '-';
  return `${unit === 'ms' ? value.toFixed(1) : Math.round(value)} ${unit}`;
}

/** The verdict as a Markdown table: row, figure, the reference's figure, ratio, target, met or missed. */
export function verdictTable(judged: readonly Judged[]): string {
  const lines = judged.map((j) => {
    const target: Target = TARGETS[j.target];
    const reference = target.against ? figureText(j.reference, target.unit) : '-';
    const ratio = j.ratio === undefined ? '-' : Number.isFinite(j.ratio) ? `${j.ratio.toFixed(2)}x` : '-';
    return `| ${j.row} | ${figureText(j.figure, target.unit)} | ${reference} | ${ratio} | ${targetText(j.target)} | ${j.met ? 'met' : '**missed**'} |`;
  });
  return ['| row | figure | against | ratio | target | verdict |', '|---|---:|---:|---:|---|---|', ...lines].join('\n');
}

