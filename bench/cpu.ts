// CPU time as Linux counts it in /proc, for the bench to say where a request's time went: a
// process's threads by name (Node's MainThread; V8Worker, V8's helpers, which do most of the
// garbage collection; WorkerThread, the pool's), every PostgreSQL backend, the whole machine.
// Elsewhere (no /proc) every figure is empty and the bench says nothing of CPU.
import { existsSync, readdirSync, readFileSync } from 'node:fs';

/** /proc counts in USER_HZ ticks, 100 a second on every Linux. */
const US_PER_TICK = 10_000;
export const CPU_COUNTED = existsSync('/proc/stat');

/** utime + stime of one /proc/<pid>[/task/<tid>]/stat, and the name it gives. */
function statOf(file: string): { name: string; us: number } | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined; // gone meanwhile
  }
  const close = text.lastIndexOf(')');
  const fields = text.slice(close + 2).split(' ');
  return { name: text.slice(text.indexOf('(') + 1, close), us: (Number(fields[11]) + Number(fields[12])) * US_PER_TICK };
}

/** CPU readings by thread or process id, each with its name. */
export type CpuReadings = Map<string, { name: string; us: number }>;

/** CPU (us) so far of each thread of process `pid` (none when there is no pid to read). */
export function threadsCpu(pid: number | undefined): CpuReadings {
  const threads: CpuReadings = new Map();
  if (!CPU_COUNTED || pid === undefined) return threads;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const stat = statOf(`/proc/${pid}/task/${tid}/stat`);
    if (stat) threads.set(tid, stat);
  }
  return threads;
}

/** CPU (us) so far of each process named postgres. */
export function postgresCpu(): CpuReadings {
  const backends: CpuReadings = new Map();
  if (!CPU_COUNTED) return backends;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const stat = statOf(`/proc/${pid}/stat`);
    if (stat?.name === 'postgres') backends.set(pid, stat);
  }
  return backends;
}

/** CPU (us) so far of the whole machine. */
export function machineCpu(): number {
  if (!CPU_COUNTED) return 0;
  // user nice system idle iowait irq softirq: all but idle and iowait are work.
  const [user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return (user! + nice! + system! + irq! + softirq!) * US_PER_TICK;
}

/**
 * Each name's CPU between two readings: each id's growth, a new one's from zero. A thread or
 * backend that exited meanwhile (a pool closing idle connections) takes its count with it, so
 * summing the totals instead would subtract all it ever used.
 */
export function cpuBetween(before: CpuReadings, after: CpuReadings): Map<string, number> {
  const byName = new Map<string, number>();
  for (const [id, { name, us }] of after) byName.set(name, (byName.get(name) ?? 0) + us - (before.get(id)?.us ?? 0));
  return byName;
}
