from enum import StrEnum

class TickState(StrEnum):
    FAILED = "failed"
    QUEUED = "queued"
    SKIPPED = "skipped"
    STARTED = "started"

    def __str__(self) -> str:
        return str(self.value)
