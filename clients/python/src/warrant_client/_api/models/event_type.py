from enum import StrEnum

class EventType(StrEnum):
    APPROVAL_CONSUMED = "approval_consumed"
    APPROVAL_EXPIRED = "approval_expired"
    APPROVAL_GRANTED = "approval_granted"
    APPROVAL_REQUESTED = "approval_requested"
    APPROVAL_RESOLVED = "approval_resolved"
    CALL_DISPATCHED = "call_dispatched"
    CALL_FINISHED = "call_finished"
    CALL_IN_DOUBT = "call_in_doubt"
    CALL_RECONCILED = "call_reconciled"
    CALL_STARTED = "call_started"
    CARRIED = "carried"
    CHILD_FINISHED = "child_finished"
    CHILD_SPAWNED = "child_spawned"
    CHILD_WAITING = "child_waiting"
    DECIDED = "decided"
    DECIDE_FAILED = "decide_failed"
    OBSERVED = "observed"
    OBSERVE_FAILED = "observe_failed"
    PROVIDER_RESTARTED = "provider_restarted"
    RUN_FINISHED = "run_finished"
    RUN_RESUMED = "run_resumed"
    RUN_STARTED = "run_started"
    RUN_TAKEN_UP = "run_taken_up"
    STEP_FINISHED = "step_finished"
    STEP_SKIPPED = "step_skipped"
    STEP_STARTED = "step_started"
    TIMER_FIRED = "timer_fired"
    TIMER_SET = "timer_set"

    def __str__(self) -> str:
        return str(self.value)
