from enum import StrEnum

class CallStatus(StrEnum):
    CANCELLED = "cancelled"
    HALTED = "halted"
    NOT_PERFORMED = "not_performed"
    OK = "ok"
    PROVIDER_ERROR = "provider_error"
    REJECTED = "rejected"
    STOPPED_BY_EXECUTION_CONTROL = "stopped_by_execution_control"
    STOPPED_BY_POLICY = "stopped_by_policy"

    def __str__(self) -> str:
        return str(self.value)
