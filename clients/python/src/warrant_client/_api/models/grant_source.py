from enum import StrEnum

class GrantSource(StrEnum):
    CARRIED = "carried"
    DECIDER = "decider"
    INPUT = "input"
    OBJECTIVE = "objective"
    TRUSTED_OUTPUT = "trusted_output"
    USER = "user"

    def __str__(self) -> str:
        return str(self.value)
