// The API's problem details (RFC 9457) as errors, one class per problem `type`, so a caller
// branches with `instanceof`: `if (e instanceof QuotaReached) await sleep(e.retryAfter! * 1000)`.

/** Anything this client throws on purpose. */
export class WarrantError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The server answered with a problem. */
export class ProblemError extends WarrantError {
  /** `urn:warrant:problem:<kind>`. */
  readonly type: string;
  readonly title: string;
  readonly status: number;
  /** What is wrong, and where. */
  readonly detail: string;
  /** Seconds after which trying again may succeed (`Retry-After`), when the server said. */
  readonly retryAfter?: number;

  constructor(p: { type: string; title: string; status: number; detail: string; retryAfter?: number }) {
    super(`${p.status} ${p.title}: ${p.detail}`);
    this.type = p.type;
    this.title = p.title;
    this.status = p.status;
    this.detail = p.detail;
    this.retryAfter = p.retryAfter;
  }
}

export class BadRequest extends ProblemError {}
export class Unauthorized extends ProblemError {}
export class Forbidden extends ProblemError {}
export class NotFound extends ProblemError {}
export class MethodNotAllowed extends ProblemError {}
export class RequestTimeout extends ProblemError {}
/** 409: the state does not allow it. */
export class Conflict extends ProblemError {}
/** The arguments answered are not the ones the request holds now, or the arguments shown do
 * not hash to the digest shown (thrown before anything is sent). */
export class DigestMismatch extends Conflict {}
export class IdempotencyKeyReused extends Conflict {}
export class RunEnded extends Conflict {}
/** The run is being driven (by this server or another process). */
export class RunDriven extends Conflict {}
export class DrivenElsewhere extends Conflict {}
export class TooLarge extends ProblemError {}
/** 422: the spec or the options do not validate. */
export class Invalid extends ProblemError {}
/** 429: a tenant's quota; `retryAfter` says when to try again. */
export class QuotaReached extends ProblemError {}
export class ServerFailed extends ProblemError {}
/** 503: busy or shutting down; try again later. */
export class Unavailable extends ProblemError {}

const KINDS: Record<string, typeof ProblemError> = {
  "bad-request": BadRequest,
  unauthorized: Unauthorized,
  forbidden: Forbidden,
  "not-found": NotFound,
  "method-not-allowed": MethodNotAllowed,
  timeout: RequestTimeout,
  conflict: Conflict,
  "digest-mismatch": DigestMismatch,
  "idempotency-key-reused": IdempotencyKeyReused,
  "run-ended": RunEnded,
  "run-driven": RunDriven,
  "driven-elsewhere": DrivenElsewhere,
  "too-large": TooLarge,
  invalid: Invalid,
  quota: QuotaReached,
  failed: ServerFailed,
  unavailable: Unavailable,
};
const PREFIX = "urn:warrant:problem:";

/** The typed error for an answer with `status` and `body` (a problem document, parsed or
 * not, or whatever a proxy put there). */
export function problemFrom(status: number, body: unknown, retryAfter?: string | null): ProblemError {
  let fields: Record<string, unknown> = {};
  if (typeof body === "string") {
    try {
      const parsed: unknown = JSON.parse(body);
      if (parsed && typeof parsed === "object") fields = parsed as Record<string, unknown>;
    } catch {
      fields = { detail: body.slice(0, 200) };
    }
  } else if (body && typeof body === "object") {
    fields = body as Record<string, unknown>;
  }
  const type = typeof fields.type === "string" ? fields.type : "about:blank";
  const kind = type.startsWith(PREFIX) ? type.slice(PREFIX.length) : "";
  const Kind = KINDS[kind] ?? ProblemError;
  const wait = retryAfter != null && retryAfter !== "" ? Number(retryAfter) : undefined;
  return new Kind({
    type,
    title: typeof fields.title === "string" ? fields.title : "HTTP error",
    status: typeof fields.status === "number" ? fields.status : status,
    detail: typeof fields.detail === "string" ? fields.detail : "",
    retryAfter: wait !== undefined && Number.isFinite(wait) ? wait : undefined,
  });
}
