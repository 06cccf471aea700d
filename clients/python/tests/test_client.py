"""The client library against a live `warrant serve` (started by
`crates/warrant-cli/tests/api_clients.rs`, which installs the wheel it built and runs
`python -m unittest` here). Environment: WARRANT_URL, the server; WARRANT_DIGESTS, a JSON file
of values and the digests the server's own code gives them."""

import json
import os
import socket
import subprocess
import sys
import threading
import unittest
import uuid

from warrant_client import (
    DigestMismatch,
    IdempotencyKeyReused,
    Invalid,
    NotFound,
    ProblemError,
    Warrant,
    canonical_json,
    digest,
)

URL = os.environ["WARRANT_URL"]
SPEC = "pay-rent/spec.yaml"
HERE = os.path.dirname(os.path.abspath(__file__))


class CuttingProxy:
    """A loopback TCP proxy to the server that cuts each of its first `cuts` connections after
    `after` bytes of the server's answer: a connection that drops mid-stream."""

    def __init__(self, upstream: str, cuts: int, after: int) -> None:
        host, port = upstream.split("//", 1)[1].split(":")
        self.upstream = (host, int(port))
        self.cuts, self.after = cuts, after
        self.connections = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            limit = self.after if self.connections <= self.cuts else None
            server = socket.create_connection(self.upstream)
            threading.Thread(target=self._pump, args=(client, server, None), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, limit), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, limit) -> None:
        sent = 0
        try:
            while True:
                chunk = src.recv(4096)
                if not chunk:
                    break
                if limit is not None and sent + len(chunk) >= limit:
                    dst.sendall(chunk[: limit - sent])
                    break
                dst.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self.listener.close()


class ClientTest(unittest.TestCase):
    def setUp(self) -> None:
        self.w = Warrant(URL)

    def start(self, key=None):
        return self.w.start_run(spec_path=SPEC, ask_tools=["transfer"], idempotency_key=key)

    def test_a_key_starts_one_run_and_refuses_another_body(self) -> None:
        key = f"py-{uuid.uuid4()}"
        first = self.start(key)
        again = self.start(key)
        self.assertEqual(first.run_id, again.run_id)
        with self.assertRaises(IdempotencyKeyReused) as caught:
            self.w.start_run(spec_path=SPEC, idempotency_key=key)
        self.assertEqual(caught.exception.status, 409)
        self.w.cancel(first.run_id, "the test is done with it")

    def test_problems_are_typed(self) -> None:
        with self.assertRaises(NotFound) as caught:
            self.w.run("no-such-run")
        self.assertEqual(caught.exception.status, 404)
        self.assertIn("no-such-run", caught.exception.detail)
        with self.assertRaises(Invalid) as caught:
            self.w.start_run(spec={"objective": "a spec with no steps"})
        self.assertEqual(caught.exception.type, "urn:warrant:problem:invalid")
        self.assertTrue(isinstance(caught.exception, ProblemError))

    def test_the_digest_is_computed_as_the_server_computes_it(self) -> None:
        with open(os.environ["WARRANT_DIGESTS"], encoding="utf-8") as f:
            vectors = json.load(f)
        self.assertGreater(len(vectors), 5)
        for v in vectors:
            value = json.loads(v["json"])
            self.assertEqual(canonical_json(value), v["canonical"], v["json"])
            self.assertEqual(digest(value), v["digest"], v["json"])

    def test_an_approval_is_checked_against_what_was_shown_then_the_run_ends(self) -> None:
        run = self.start().run_id
        asked = self.w.wait_for_approval(run)
        self.assertEqual(asked.tool, "transfer")
        self.assertEqual(digest(asked.args), asked.args_digest)

        # Arguments that are not the ones the digest binds: refused here, nothing sent.
        altered = type(asked).from_dict(asked.to_dict())
        altered.args = dict(asked.args, amount=1)
        with self.assertRaises(DigestMismatch) as caught:
            self.w.approve(altered)
        self.assertIn("nothing was sent", caught.exception.detail)
        self.assertEqual([a.request for a in self.w.approvals(run=run)], [asked.request])

        # Consistent, but not what the server holds: the server refuses it (409).
        forged = type(asked).from_dict(asked.to_dict())
        forged.args = altered.args
        forged.args_digest = digest(altered.args)
        with self.assertRaises(DigestMismatch) as caught:
            self.w.approve(forged)
        self.assertEqual(caught.exception.status, 409)
        self.assertNotIn("nothing was sent", caught.exception.detail)

        answer = self.w.approve(asked)
        self.assertEqual(answer.status, "approved")
        ended = self.w.wait(run)
        self.assertEqual(ended.status.value, "attained")
        report = self.w.report(run)
        self.assertEqual(report.status, "attained")

    def test_the_follower_resumes_from_the_last_event_after_a_dropped_connection(self) -> None:
        run = self.start().run_id
        self.w.approve(self.w.wait_for_approval(run))
        self.w.wait(run)
        whole = [e.seq for e in self.w.events(run)]
        self.assertEqual(whole, list(range(1, len(whole) + 1)))

        proxy = CuttingProxy(URL, cuts=3, after=1200)
        try:
            cut = Warrant(proxy.url)
            seen = [e.seq for e in cut.events(run)]
        finally:
            proxy.close()
        self.assertGreater(proxy.connections, 3, "the stream was cut and joined again")
        self.assertEqual(seen, whole, "each event once, in order, none lost")

        # And from a given event: only what follows it.
        tail = [e.seq for e in self.w.events(run, last_event_id=whole[-3])]
        self.assertEqual(tail, whole[-2:])

    def test_the_readme_example_runs(self) -> None:
        example = os.path.join(HERE, "..", "examples", "approve.py")
        said = subprocess.run(
            [sys.executable, example, URL], capture_output=True, text=True, timeout=120
        )
        self.assertEqual(said.returncode, 0, said.stdout + said.stderr)
        self.assertIn("asks:", said.stdout)
        self.assertTrue(said.stdout.rstrip().endswith(": attained"), said.stdout)
        print("\n" + said.stdout, file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
