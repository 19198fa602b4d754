// The shapes of the ids and secrets the service hands out.

export const ID = {
  project: /^proj_[0-9a-f]{20}$/,
  consumer: /^cons_[0-9a-f]{20}$/,
  key: /^papi_[0-9a-f]{20}$/,
  app: /^mapp_[0-9a-f]{20}$/,
  field: /^madi_[0-9a-f]{20}$/,
  instruction: /^miid_[0-9a-f]{20}$/,
  file: /^file_[0-9a-f]{20}$/,
  run: /^run_[0-9a-f]{20}$/,
  event: /^evnt_[0-9a-f]{20}$/,
  eventType: /^evty_[0-9a-f]{20}$/,
};

/** A whole key secret, as POST /v1/key and `workspace project create` print it. */
export const SECRET = /^sk-project-[0-9A-Za-z]{43,}$/;

/** Anything that looks like (part of) a secret, for searching logs. */
export const SECRET_SHAPED = /sk-project-[0-9A-Za-z]{8,}/;
