// The one error table: every status title and every failure message the service answers with.
import { CONNECTION_EXCEPTION_CLASS, SQLSTATE } from '../lib/sqlstate.ts';

export const TITLES: Readonly<Record<number, string>> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  301: 'Moved Permanently',
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Payload Too Large',
  422: 'Unprocessable entity',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
  505: 'HTTP Version Not Supported',
};

/** A failure the contract names: its status and its exact message. */
export class ApiError extends Error {
  readonly status: number;
  /** Seconds the client should wait before trying again (the Retry-After header). */
  readonly retryAfterSeconds: number | undefined;
  /** The envelope's `code` as a string: only the gateway's unknown-path 404. */
  readonly codeAsText: boolean;
  constructor(status: number, message: string, retryAfterSeconds?: number, codeAsText = false) {
    super(message);
    this.status = status;
    this.retryAfterSeconds = retryAfterSeconds;
    this.codeAsText = codeAsText;
  }
}

/** Seconds a client should wait before retrying a 503. */
export const RETRY_AFTER_SECONDS = 1;
/** Streams free their places slowly: a client asked to wait longer than for a busy pool. */
export const STREAMS_RETRY_AFTER_SECONDS = 5;

const fail = (status: number, message: string) => () => new ApiError(status, message);

export const errors = {
  movedPermanently: fail(301, 'Use HTTPS: repeat the request at the Location given.'),
  invalidJson: fail(400, 'Invalid JSON.'),
  malformedHttp: fail(400, 'Malformed HTTP request.'),
  headersTooLarge: fail(431, 'Request headers too large.'),
  versionNotSupported: fail(505, 'HTTP version not supported.'),
  requestTimeout: fail(408, 'The request took too long to arrive.'),
  tooDeep: fail(422, 'The JSON body is nested too deeply.'),
  unstorableText: fail(422, 'Text must be valid Unicode without NUL characters.'),
  noKey: fail(401, 'No valid API key provided.'),
  keyExpired: fail(401, 'The API key has expired.'),
  keyRefused: fail(403, "The API key doesn't have permissions to perform the request."),
  tooManyRefusals: (retryAfterSeconds: number) =>
    new ApiError(429, 'Too many requests with an invalid API key. Retry later.', retryAfterSeconds),
  keyRateLimited: (retryAfterSeconds: number) =>
    new ApiError(429, 'Too many requests for this API key. Retry later.', retryAfterSeconds),
  missingScope: (scope: string) => new ApiError(403, `The API key is missing the required scope: ${scope}`),
  gatewayNotFound: () => new ApiError(404, 'The requested resource was not found.', undefined, true),
  methodNotAllowed: fail(405, 'The request method is not allowed.'),
  bodyTooLarge: fail(413, 'Request body too large.'),
  unprocessable: fail(422, 'The parameters were valid but the request failed.'),
  internal: fail(500, 'Internal server error.'),
  notImplemented: fail(501, 'This endpoint is not implemented yet.'),
  unavailable: () => new ApiError(503, 'Service temporarily unavailable. Please retry.', RETRY_AFTER_SECONDS),


  limit: fail(422, 'limit must be an integer from 1 to 100.'),
  offset: fail(422, 'offset must be a non-negative integer.'),

  keyNotFound: fail(404, 'API key not found.'),
  keyNameRequired: fail(422, 'name is required.'),
  keyNameType: fail(422, 'name must be a string.'),
  keyNameLength: fail(422, 'name must be at most 200 characters.'),
  scopeNotArray: fail(400, 'scope must be an array.'),
  scopeEmpty: fail(422, 'scope must name at least one scope.'),
  scopeUnknown: (entry: unknown) => new ApiError(422, `Unknown scope: ${typeof entry === 'string' ? entry : JSON.stringify(entry)}.`),
  scopeWider: fail(403, 'Cannot create a key with wider scope than the calling key.'),
  outlivesCaller: fail(403, 'Cannot create a key that outlives the calling key.'),
  expiresAt: fail(422, 'expires_at must be a future Unix time in seconds.'),
  revokeCurrent: fail(422, 'Cannot revoke the API key currently in use.'),
  graceS: fail(422, 'grace_s must be an integer from 0 to 2592000.'),
  rollExpired: fail(422, 'An expired API key cannot be rolled.'),
  rateLimitInvalid: fail(422, 'rate_limit must be null or {"limit": 1..1000000, "window_s": 1..86400}.'),
  rateLimitLooser: fail(403, 'Cannot create a key with a looser rate limit than the calling key.'),

  eventNotFound: fail(404, 'Event not found.'),
  streamAfter: fail(422, 'after must be a non-negative integer.'),
  streamUnknownType: (name: string) => new ApiError(422, `Unknown event type: ${name}.`),
  streamsFull: () => new ApiError(503, 'Too many event streams are open. Retry later.', STREAMS_RETRY_AFTER_SECONDS),
  checkpointNotFound: fail(404, 'Checkpoint not found.'),
  idempotencyKeyInvalid: fail(400, 'Idempotency-Key must be 1 to 255 visible ASCII characters.'),
  idempotencyMismatch: fail(422, 'Idempotency-Key was already used with a different request.'),
  idempotencyInProgress: () => new ApiError(409, 'A request with this Idempotency-Key is in progress.', RETRY_AFTER_SECONDS),
  checkpointSequence: fail(422, 'sequence must be a positive integer.'),

  appNotFound: fail(404, 'App not found.'),
  planNoCustomApps: fail(402, 'The current billing plan does not allow custom app creation for this project.'),
  planAppLimit: fail(402, 'The current billing plan app limit has been reached for this project.'),
  appNameRequired: fail(422, 'name is required.'),
  appNameType: fail(422, 'name must be a string.'),
  appNameLength: fail(422, 'name must be at most 200 characters.'),
  appDescriptionRequired: fail(422, 'description is required.'),
  appDescriptionType: fail(422, 'description must be a string.'),
  appDescriptionLength: fail(422, 'description must be at most 2000 characters.'),
  categoryUnknown: fail(404, 'The selected category does not exist.'),
  categoryNoImageModel: fail(422, 'The selected category has no model that reads images.'),
  dataNotArray: fail(422, 'data must be a non-empty array.'),
  dataFieldShape: fail(422, 'Each data field needs a type and a name.'),
  dataFieldPlaceholder: fail(422, 'placeholder must be a string.'),
  dataFieldRequiredFlag: fail(422, 'required must be a boolean.'),
  dataTypeUnknown: fail(404, 'The selected data type does not exist.'),
  dataNamesUnique: fail(422, 'Data field names must be unique.'),
  dataNoneRequired: fail(422, 'At least one data field must be required.'),
  instructionNotArray: fail(422, 'instruction must be a non-empty array.'),
  instructionShape: fail(422, 'Each instruction needs a type and an instruction.'),
  instructionTypeUnknown: fail(404, 'The selected instruction type does not exist.'),
  appStatus: fail(422, "status must be 'draft' or 'activated'."),
  appType: fail(422, "type must be 'public' or 'private'."),
  publishNeedsActivation: fail(422, 'The app must be activated before it can be published.'),
  publishNeedsImageLogo: fail(422, 'The app needs an image logo before it can be published.'),
  nothingToUpdate: fail(422, 'Nothing to update. Provide name, description and/or type.'),
  appNameEmpty: fail(422, 'name must not be empty.'),
  appDescriptionEmpty: fail(422, 'description must not be empty.'),

  webhookNotFound: fail(404, 'Webhook endpoint not found.'),
  webhookUrlRequired: fail(422, 'url is required.'),
  webhookUrlHttps: fail(422, 'url must be an https URL.'),
  webhookUrlPrivate: fail(422, 'url must not point at a private or loopback address.'),
  webhookTypesNotArray: fail(422, 'types must be an array of event type names.'),
  webhookDescriptionType: fail(422, 'description must be a string.'),
  webhookDescriptionLength: fail(422, 'description must be at most 200 characters.'),
  webhookStatus: fail(422, "status must be 'enabled' or 'disabled'."),
  webhookNothingToUpdate: fail(422, 'Nothing to update. Provide url, description, types and/or status.'),
  webhookReplayDisabled: fail(422, 'The webhook endpoint is disabled.'),
} as const;

// SQLSTATE classes and codes meaning "the database is not there right now", not "the query is wrong".
const UNAVAILABLE_SQLSTATES = new Set<string>([
  SQLSTATE.adminShutdown, SQLSTATE.crashShutdown, SQLSTATE.cannotConnectNow, SQLSTATE.tooManyConnections, SQLSTATE.queryCanceled,
  // A change aborted to break a deadlock as many times as domain/services.ts runs it: try again.
  SQLSTATE.deadlockDetected,
]);
const UNAVAILABLE_SYSCALL_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'EAI_AGAIN']);

/** Unreachable database (503), not a fault (500); node-postgres's codeless timeouts match by message. */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code.startsWith(CONNECTION_EXCEPTION_CLASS) || UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_SYSCALL_CODES.has(code)) return true;
  }
  if (err instanceof AggregateError) return err.errors.some(isDatabaseUnavailable);
  return /timeout exceeded when trying to connect|Connection terminated|Query read timeout|Client has encountered a connection error|Connection terminated unexpectedly/.test(err.message);
}
