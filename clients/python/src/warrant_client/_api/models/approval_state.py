from enum import StrEnum

class ApprovalState(StrEnum):
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"
    PENDING = "pending"
    WITHDRAWN = "withdrawn"

    def __str__(self) -> str:
        return str(self.value)
