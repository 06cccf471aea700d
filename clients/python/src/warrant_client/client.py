"""`Warrant`: the API of `warrant serve` for a program, typed by the models generated from
its OpenAPI document (`warrant_client.models`), with what a generator does not write: the
event stream followed across disconnections, approvals checked against the digest shown,
problems as typed exceptions."""

from __future__ import annotations

import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, cast
from urllib.parse import quote

import httpx

from ._api import AuthenticatedClient, Client
from ._api.api.default import (
    approve as _approve,
    cancel_run as _cancel,
    deny as _deny,
    get_run as _get_run,
    get_run_report as _get_report,
    list_approvals as _list_approvals,
    list_runs as _list_runs,
    reconcile_call as _reconcile,
    start_run as _start_run,
)
from ._api.models import (
    AnswerResult,
    ApprovalRow,
    ApproveBody,
    CancelBody,
    DenyBody,
    ReconcileBody,
    RunRef,
    RunReport,
    RunsPage,
    RunView,
    StartRun,
    StartRunInputs,
)
from ._api.types import UNSET, Response
from .digest import digest
from .errors import DigestMismatch, WarrantError, problem_from
from .events import Event, messages

_RETRY_CAP_S = 5.0


class Warrant:
    """A client of one Warrant server.

    `token` is the principal's bearer token (none for a server on loopback without a
    principals file). Every method raises a `ProblemError` subclass for a problem the server
    answers (`NotFound`, `Invalid`, `DigestMismatch`, `QuotaReached`, ...) and
    `httpx.TransportError` when the server cannot be reached."""

    def __init__(self, base_url: str, token: Optional[str] = None, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._timeout = timeout
        t = httpx.Timeout(timeout)
        # The generated operations take either client (they only use its connection); without
        # a token no `Authorization` header is sent.
        self.api: AuthenticatedClient = (
            AuthenticatedClient(base_url=self.base_url, token=token, timeout=t)
            if token
            else cast(AuthenticatedClient, Client(base_url=self.base_url, timeout=t))
        )

    # Runs.

    def start_run(
        self,
        *,
        spec: Any = None,
        spec_path: Optional[str] = None,
        spec_id: Optional[str] = None,
        decider: Optional[str] = None,
        inputs: Optional[Dict[str, Any]] = None,
        ask_tools: Sequence[str] = (),
        deny_tools: Sequence[str] = (),
        idempotency_key: Optional[str] = None,
    ) -> RunRef:
        """Starts a run of a spec: inline (`spec`, YAML/JSON text or a dict), a file under the
        server's specs folder (`spec_path`) or a catalog spec (`spec_id`). With an
        `idempotency_key`, asking again gives the same run (and never a second one)."""
        body = StartRun(
            spec=spec if spec is not None else UNSET,
            spec_path=spec_path if spec_path is not None else UNSET,
            spec_id=spec_id if spec_id is not None else UNSET,
            decider=decider if decider is not None else UNSET,
            inputs=StartRunInputs.from_dict(inputs) if inputs is not None else UNSET,
            ask_tools=list(ask_tools),
            deny_tools=list(deny_tools),
        )
        return _ok(
            _start_run.sync_detailed(
                client=self.api,
                body=body,
                idempotency_key=idempotency_key if idempotency_key is not None else UNSET,
            )
        )

    def run(self, run_id: str) -> RunView:
        """The run as `warrant show` has it."""
        return _ok(_get_run.sync_detailed(run_id, client=self.api))

    def runs(self, **query: Any) -> RunsPage:
        """A page of runs, newest first (`status`, `spec`, `limit`, `before`... as the API's
        `GET /v1/runs` takes them)."""
        return _ok(_list_runs.sync_detailed(client=self.api, **query))

    def report(self, run_id: str) -> RunReport:
        """The run's evidence report."""
        return _ok(_get_report.sync_detailed(run_id, client=self.api))

    def cancel(self, run_id: str, reason: str = "") -> None:
        """Ends the run `cancelled` (operator)."""
        _ok(_cancel.sync_detailed(run_id, client=self.api, body=CancelBody(reason=reason)))

    def reconcile(
        self, run_id: str, call: str, *, happened: bool, resend: bool = False, note: str = ""
    ) -> Any:
        """Settles a call whose effect is in doubt with what was found out (operator)."""
        body = ReconcileBody(happened=happened, resend=resend, note=note)
        return _ok(_reconcile.sync_detailed(run_id, call, client=self.api, body=body))

    def wait(self, run_id: str, *, last_event_id: Optional[int] = None) -> RunView:
        """Follows the run until it ends; then the run as it ended."""
        for event in self.events(run_id, last_event_id=last_event_id):
            if event.ends_run:
                break
        return self.run(run_id)

    # Events.

    def events(
        self,
        run_id: str,
        *,
        last_event_id: Optional[int] = None,
        retries: int = 8,
        read_timeout: float = 45.0,
    ) -> Iterator[Event]:
        """The run's events in order, each once, from the first (or after `last_event_id`)
        through its last (`run_finished`). When the connection drops or the server restarts
        it connects again with `Last-Event-ID`, so nothing is missed or repeated; it gives up
        after `retries` failures in a row. The server sends a keep-alive every 15 s, so a
        `read_timeout` of silence means the connection is dead."""
        last = last_event_id
        failures = 0
        path = f"/v1/runs/{quote(run_id, safe='')}/events"
        timeout = httpx.Timeout(self._timeout, read=read_timeout)
        while True:
            headers = {"Accept": "text/event-stream"}
            if last is not None:
                headers["Last-Event-ID"] = str(last)
            try:
                with self.api.get_httpx_client().stream(
                    "GET", path, headers=headers, timeout=timeout
                ) as answer:
                    if answer.status_code >= 400:
                        answer.read()
                        raise problem_from(
                            answer.status_code, answer.content, answer.headers.get("retry-after")
                        )
                    for message in messages(answer.iter_lines()):
                        if message.event == "error":
                            raise WarrantError(f"the event stream of {run_id} failed: {message.data}")
                        event = Event.parse(message.data)
                        if last is not None and event.seq <= last:
                            continue
                        failures = 0
                        last = event.seq
                        yield event
                        if event.ends_run:
                            return
            except (httpx.TransportError, httpx.StreamError) as e:
                reason: Any = e
            else:
                reason = "the server closed the stream before the run's last event"
            failures += 1
            if failures > retries:
                raise WarrantError(
                    f"lost the event stream of {run_id} {failures} times in a row "
                    f"(last event {last}): {reason}"
                )
            time.sleep(min(_RETRY_CAP_S, 0.1 * 2 ** (failures - 1)))

    # Approvals.

    def approvals(self, run: Optional[str] = None) -> List[ApprovalRow]:
        """Pending approval requests (of `run`, or of every run the caller may see)."""
        rows = _ok(
            _list_approvals.sync_detailed(client=self.api, run=run if run is not None else UNSET)
        )
        return list(rows)

    def wait_for_approval(self, run_id: str, *, last_event_id: Optional[int] = None) -> ApprovalRow:
        """Follows the run until it asks for an approval; that request. Raises `WarrantError`
        when the run ends without asking."""
        for event in self.events(run_id, last_event_id=last_event_id):
            if event.type == "approval_requested":
                request = event.data.get("request")
                for row in self.approvals(run=run_id):
                    if row.request == request:
                        return row
            if event.ends_run:
                break
        raise WarrantError(f"run {run_id} ended without asking for an approval")

    def approve(
        self,
        approval: ApprovalRow,
        *,
        scope: str = "once",
        until_ms: Optional[int] = None,
        args: Any = None,
    ) -> AnswerResult:
        """Approves the request as it was shown: its arguments must hash to its digest (checked
        here first), and the server lets the call through only if they are still the ones it
        holds (`DigestMismatch` otherwise). `scope`: `once` or `run`; `args`: approve these
        arguments instead (validated and ruled on again)."""
        _check_shown(approval)
        body = ApproveBody(
            args_digest=approval.args_digest,
            scope=scope,
            until_ms=until_ms if until_ms is not None else UNSET,
            args=args if args is not None else UNSET,
        )
        return _ok(_approve.sync_detailed(approval.request, client=self.api, body=body))

    def deny(self, approval: ApprovalRow, reason: str = "") -> AnswerResult:
        """Denies the request as it was shown (the same digest check as `approve`)."""
        _check_shown(approval)
        body = DenyBody(args_digest=approval.args_digest, reason=reason)
        return _ok(_deny.sync_detailed(approval.request, client=self.api, body=body))


def _check_shown(approval: ApprovalRow) -> None:
    """The arguments shown hash to the digest that will be sent."""
    found = digest(approval.args)
    if found != approval.args_digest:
        raise DigestMismatch(
            type="urn:warrant:problem:digest-mismatch",
            title="Conflict",
            status=409,
            detail=(
                f"the arguments shown for {approval.request} hash to {found}, "
                f"not to the digest shown ({approval.args_digest}): nothing was sent"
            ),
        )


def _ok(response: Response) -> Any:
    """The parsed answer, or the typed problem."""
    if response.status_code >= 400:
        raise problem_from(
            int(response.status_code), response.content, response.headers.get("retry-after")
        )
    return response.parsed
