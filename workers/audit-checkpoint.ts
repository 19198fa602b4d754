// `audit.checkpoint`: signs each project's chain head when it moved past its latest checkpoint,
// at most once every CHECKPOINT_INTERVAL_S per project. Sent by the worker's sweep.
import { checkpointsDue, loadSigner, makeCheckpoints, registerSigner, type Signer } from '../domain/checkpoints.ts';
import type { Config } from '../lib/config.ts';
import { QUICK_JOB } from '../lib/jobs.ts';
import { countCheckpoints } from './metrics.ts';
import { FETCHING, type JobQueue } from './queue.ts';

/** How often the worker asks whether a head is due: the latest a checkpoint comes after its interval. */
const SWEEP_INTERVAL_MS = 1000;
const signers = new WeakMap<Config, Signer>();

function signerOf(config: Config): Signer {
  let signer = signers.get(config);
  if (!signer) signers.set(config, signer = loadSigner(config));
  return signer;
}

export const auditCheckpoint: JobQueue<'audit.checkpoint'> = {
  name: 'audit.checkpoint',
  options: { ...QUICK_JOB, policy: 'short' },
  fetch: FETCHING,
  sweep: { intervalMs: SWEEP_INTERVAL_MS, pending: (services) => checkpointsDue(services.pool, services.config.checkpointIntervalS) },
  // A key that cannot be read stops the worker at start, not at its first checkpoint.
  prepare: (services) => registerSigner(services.pool, signerOf(services.config)),
  async handle(services) {
    const signer = signerOf(services.config);
    await registerSigner(services.pool, signer);
    const made = await makeCheckpoints(services.pool, signer, services.config.checkpointIntervalS);
    countCheckpoints(services.pool, made);
    if (made > 0) services.log.info({ checkpoints: made }, 'audit checkpoints signed');
  },
};
