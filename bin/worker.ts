// Procfile `worker`: the pg-boss job handlers.
import { startJobWorkers } from '../workers/start.ts';
import { runProcess } from './lifecycle.ts';

await runProcess('worker', async (config, log, database) => [await startJobWorkers(config, log, database.url)]);
