"""Starts a run that needs a person's approval, waits for the request, approves it as shown,
and prints the outcome. Usage: python approve.py [SERVER_URL]"""

import sys

from warrant_client import Warrant

w = Warrant(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:7800")
run = w.start_run(spec_path="pay-rent/spec.yaml", ask_tools=["transfer"])
print(f"started {run.run_id}")

asked = w.wait_for_approval(run.run_id)
print(f"{asked.tool} on {asked.provider} asks: {asked.reason}")
print(f"  arguments {asked.args} ({asked.args_digest[:19]}…)")
w.approve(asked)

ended = w.wait(run.run_id)
print(f"{ended.run_id}: {ended.status.value}")
