// The order of a change's statement with the planner's usual choices (test/keys/change-order.ts).
import { changeOrderTests } from './change-order.ts';

changeOrderTests('usual plans');
