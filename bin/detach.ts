// `npm start` runs the service through this, in a session of its own with its PostgreSQL, so a
// Ctrl-C reaches them from here alone and PostgreSQL stops last, after the graceful shutdown; npm
// passes signals only to its script's process, which `exec` makes this one. SIGINT, SIGTERM and
// SIGHUP are passed on; this ends as the service ends. Should this die (kill -9) the service sees
// its IPC channel close; should npm, this notices its new parent and stops the service.
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
