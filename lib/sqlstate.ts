// The SQLSTATE codes the service branches on, so no code matches an error by its (translated) message.
export const SQLSTATE = {
  foreignKeyViolation: '23503',
  uniqueViolation: '23505',
  invalidPassword: '28P01',
  insufficientPrivilege: '42501',
  duplicateObject: '42710',
  duplicateDatabase: '42P04',
  tooManyConnections: '53300',
  deadlockDetected: '40P01',
  /** lock_timeout passed (or NOWAIT found the lock taken). */
  lockNotAvailable: '55P03',
  /** Also a statement timeout. */
  queryCanceled: '57014',
  adminShutdown: '57P01',
  crashShutdown: '57P02',
  cannotConnectNow: '57P03',
  /** The service's own, raised by plan_admission. */
  planNoCustomApps: 'PMS01',
  planAppLimit: 'PMS02',
  /** Raised by change_key_check: the key making the change is refused, or expired. */
  changeKeyRefused: 'PMS03',
  changeKeyExpired: 'PMS04',
  /** Raised and caught inside plan_admission, never seen here: listed so no other use takes it. */
  admissionNearLimit: 'PMS05',
  /** Raised by key_within_caller_life (sql/migrations/0021): a new key would outlive the calling key. */
  keyOutlivesCaller: 'PMS06',
  /** Raised by rate_limit_within_caller (sql/migrations/0030): a new key's limit looser than the calling key's. */
  keyRateLimitLooser: 'PMS07',
} as const;

/** The class of every connection exception (08000, 08006, …). */
export const CONNECTION_EXCEPTION_CLASS = '08';
