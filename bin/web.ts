// Procfile `web`: the HTTPS gateway and its worker pool.
import { startGateway } from '../gateway/server.ts';
import { runProcess } from './lifecycle.ts';

await runProcess('web', async (config, log, database) => [await startGateway(config, log, database.url)], { listens: true });
