"""A typed client for Warrant's HTTP API (`warrant serve`).

    from warrant_client import Warrant

    w = Warrant("http://127.0.0.1:7800")
    run = w.start_run(spec_path="pay-rent/spec.yaml", idempotency_key="rent-2026-12")
    asked = w.wait_for_approval(run.run_id)
    w.approve(asked)
    print(w.wait(run.run_id).status)

`warrant_client.models` holds the API's types, generated from its OpenAPI document."""

from ._api import models
from .client import Warrant
from .digest import canonical_json, digest
from .errors import (
    BadRequest,
    Conflict,
    DigestMismatch,
    DrivenElsewhere,
    Forbidden,
    IdempotencyKeyReused,
    Invalid,
    MethodNotAllowed,
    NotFound,
    ProblemError,
    QuotaReached,
    RequestTimeout,
    RunDriven,
    RunEnded,
    ServerFailed,
    TooLarge,
    Unauthorized,
    Unavailable,
    WarrantError,
)
from .events import Event

__all__ = [
    "BadRequest", "Conflict", "DigestMismatch", "DrivenElsewhere", "Event", "Forbidden",
    "IdempotencyKeyReused", "Invalid", "MethodNotAllowed", "NotFound", "ProblemError",
    "QuotaReached", "RequestTimeout", "RunDriven", "RunEnded", "ServerFailed", "TooLarge",
    "Unauthorized", "Unavailable", "Warrant", "WarrantError", "canonical_json", "digest",
    "models",
]
