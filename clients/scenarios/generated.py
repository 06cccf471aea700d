"""Drives `warrant serve` through a client generated from its OpenAPI document by
openapi-python-client: create with an idempotency key, follow the events, approve with the
digest shown, fetch the report. Run by `crates/warrant-cli/tests/api_clients.rs` with the
generated package importable as `warrant_api`; argv: the server's base URL, the spec path."""

import sys
import time

from warrant_api import AuthenticatedClient
from warrant_api.api.default import (
    approve,
    get_run,
    get_run_report,
    list_approvals,
    list_run_events,
    start_run,
)
from warrant_api.models import ApproveBody, Problem, RunRef, StartRun

base, spec = sys.argv[1], sys.argv[2]
client = AuthenticatedClient(base_url=base, token="unused-on-loopback", raise_on_unexpected_status=True)


def check(cond, what):
    if not cond:
        raise SystemExit(f"scenario failed: {what}")


# Create, then the same request again with its key: the same run, 201 then 200.
body = StartRun(spec_path=spec, ask_tools=["transfer"])
first = start_run.sync_detailed(client=client, body=body, idempotency_key="scenario-1")
check(first.status_code == 201 and isinstance(first.parsed, RunRef), f"create: {first.status_code} {first.content!r}")
again = start_run.sync_detailed(client=client, body=body, idempotency_key="scenario-1")
check(again.status_code == 200 and again.parsed.run_id == first.parsed.run_id, f"retry: {again.content!r}")
run = first.parsed.run_id

# Follow the events a page at a time until the run asks for an approval.
seen, after = [], 1
for _ in range(400):
    page = list_run_events.sync(run, client=client, from_=after)
    seen += [e.type_ for e in page.events]
    after = page.next_
    if "approval_requested" in seen:
        break
    time.sleep(0.05)
check("approval_requested" in seen, f"events: {seen}")

# Approve with the digest shown; another digest is a typed problem (409).
pending = list_approvals.sync(client=client, run=run)
check(len(pending) == 1, f"approvals: {pending}")
request = pending[0]
wrong = approve.sync(request.request, client=client, body=ApproveBody(args_digest="sha256:" + "0" * 64))
check(isinstance(wrong, Problem) and wrong.status == 409, f"wrong digest: {wrong}")
done = approve.sync(request.request, client=client, body=ApproveBody(args_digest=request.args_digest))
check(not isinstance(done, Problem), f"approve: {done}")

# The run goes on to its end; its report says so.
for _ in range(400):
    view = get_run.sync(run, client=client)
    if view.status.value == "attained":
        break
    time.sleep(0.05)
check(view.status.value == "attained", f"status: {view.status}")
report = get_run_report.sync(run, client=client)
check(report.status == "attained", f"report: {report.status}")
print(f"python: {run} attained; {len(seen)} events followed before the approval")
