"""The API's problem details (RFC 9457) as exceptions, one class per problem `type`, so a
caller catches what it can handle: `except DigestMismatch`, `except QuotaReached as e:
time.sleep(e.retry_after)`."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Type


class WarrantError(Exception):
    """Anything this client raises."""


class ProblemError(WarrantError):
    """The server answered with a problem: `type` (`urn:warrant:problem:<kind>`), `title`,
    `status`, `detail`; `retry_after` (seconds) when it said when to try again."""

    kind = ""

    def __init__(
        self,
        type: str,
        title: str,
        status: int,
        detail: str,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(f"{status} {title}: {detail}")
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.retry_after = retry_after


class BadRequest(ProblemError):
    kind = "bad-request"


class Unauthorized(ProblemError):
    kind = "unauthorized"


class Forbidden(ProblemError):
    kind = "forbidden"


class NotFound(ProblemError):
    kind = "not-found"


class MethodNotAllowed(ProblemError):
    kind = "method-not-allowed"


class RequestTimeout(ProblemError):
    kind = "timeout"


class Conflict(ProblemError):
    """409: the state does not allow it."""

    kind = "conflict"


class DigestMismatch(Conflict):
    """The arguments answered are not the ones the request holds now, or the arguments shown
    do not hash to the digest shown (raised before anything is sent)."""

    kind = "digest-mismatch"


class IdempotencyKeyReused(Conflict):
    kind = "idempotency-key-reused"


class RunEnded(Conflict):
    kind = "run-ended"


class RunDriven(Conflict):
    """The run is being driven (by this server or another process)."""

    kind = "run-driven"


class DrivenElsewhere(Conflict):
    kind = "driven-elsewhere"


class TooLarge(ProblemError):
    kind = "too-large"


class Invalid(ProblemError):
    """422: the spec or the options do not validate."""

    kind = "invalid"


class QuotaReached(ProblemError):
    """429: a tenant's quota; `retry_after` says when to try again."""

    kind = "quota"


class ServerFailed(ProblemError):
    kind = "failed"


class Unavailable(ProblemError):
    """503: busy or shutting down; try again later."""

    kind = "unavailable"


_KINDS: Dict[str, Type[ProblemError]] = {
    c.kind: c
    for c in (
        BadRequest, Unauthorized, Forbidden, NotFound, MethodNotAllowed, RequestTimeout,
        Conflict, DigestMismatch, IdempotencyKeyReused, RunEnded, RunDriven, DrivenElsewhere,
        TooLarge, Invalid, QuotaReached, ServerFailed, Unavailable,
    )
}
_PREFIX = "urn:warrant:problem:"


def problem_from(status: int, body: bytes, retry_after: Optional[str] = None) -> ProblemError:
    """The typed error for an answer with `status` and `body` (a problem document, or
    anything else a proxy may have put there)."""
    fields: Dict[str, Any] = {}
    try:
        parsed = json.loads(body.decode("utf-8", "replace")) if body else {}
        if isinstance(parsed, dict):
            fields = parsed
    except ValueError:
        pass
    kind_uri = str(fields.get("type", ""))
    kind = kind_uri[len(_PREFIX):] if kind_uri.startswith(_PREFIX) else ""
    cls = _KINDS.get(kind, ProblemError)
    wait: Optional[float] = None
    if retry_after is not None:
        try:
            wait = float(retry_after)
        except ValueError:
            wait = None
    detail = fields.get("detail")
    if not isinstance(detail, str):
        detail = body[:200].decode("utf-8", "replace") if body else ""
    return cls(
        type=kind_uri or "about:blank",
        title=str(fields.get("title", "HTTP error")),
        status=int(fields.get("status", status)) if isinstance(fields.get("status", status), int) else status,
        detail=detail,
        retry_after=wait,
    )
