from enum import StrEnum

class Effect(StrEnum):
    COMMIT = "commit"
    READ = "read"

    def __str__(self) -> str:
        return str(self.value)
