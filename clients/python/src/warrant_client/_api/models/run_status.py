from enum import StrEnum

class RunStatus(StrEnum):
    ATTAINED = "attained"
    CANCELLED = "cancelled"
    CLOSED = "closed"
    EXHAUSTED = "exhausted"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    NOT_ATTAINED = "not_attained"
    QUEUED = "queued"
    READY = "ready"
    RUNNING = "running"
    SLEEPING = "sleeping"
    WAITING = "waiting"

    def __str__(self) -> str:
        return str(self.value)
