// `npm start` runs bin/start.js through this (package.json: `exec node bin/detach.js <node
// options> bin/start.js`), so that stopping npm stops the service and its embedded PostgreSQL:
// - npm passes SIGTERM and SIGINT on to its script's process only. Without `exec` that is `sh`,
//   which dies of it and leaves node running; with `exec` it is this process.
// - A Ctrl-C at a terminal sends SIGINT to the whole foreground process group. Were the service
//   and the PostgreSQL it starts in it, PostgreSQL would stop at once, under the service's
//   graceful shutdown. So the service runs in a process group (a session) of its own, and its
//   PostgreSQL with it: signals reach it from here alone, and it stops PostgreSQL last.
// SIGINT, SIGTERM and SIGHUP are passed on (the service acts on the first and ignores repeats);
// this process ends as the service ends, with its exit code or its signal. Should this process
// die unannounced (kill -9), the service sees its IPC channel close and stops (bin/lifecycle.ts);
// should npm die so, this process notices its new parent and stops the service.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';

const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const PARENT_POLL_MS = 500;

const args = process.argv.slice(2);
if (args.length === 0) {
  process.stderr.write('usage: node bin/detach.js [node options] <script> [arguments]\n');
  process.exit(2);
}

const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
for (const signal of FORWARDED) process.on(signal, () => child.kill(signal));

const parent = process.ppid;
const parentWatch = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(parentWatch);
  child.kill('SIGTERM');
}, PARENT_POLL_MS);

child.on('error', (err) => {
  process.stderr.write(`detach: ${err.message}\n`);
  process.exit(1);
});
child.on('exit', (code, signal) => {
  clearInterval(parentWatch);
  if (signal === null) process.exit(code ?? 1);
  // Ended by a signal: end by the same one, as a shell reports it (128 + its number otherwise).
  process.exitCode = 128 + (constants.signals[signal] ?? 0);
  process.removeAllListeners(signal);
  process.kill(process.pid, signal);
});
