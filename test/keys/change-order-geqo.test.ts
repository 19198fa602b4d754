// The order of a change's statement when the planner reorders every join it may (the genetic
// optimizer from two relations on): set for every connection of this process before the service
// starts (node-postgres reads PGOPTIONS), so the gateway's and its pool thread's too.
process.env.PGOPTIONS = '-c geqo_threshold=2';
const { changeOrderTests } = await import('./change-order.ts');

changeOrderTests('every join reordered');
