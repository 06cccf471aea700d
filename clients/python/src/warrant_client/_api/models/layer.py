from enum import StrEnum

class Layer(StrEnum):
    MODEL = "model"
    ORCHESTRATION = "orchestration"
    POLICY = "policy"
    PROVIDER = "provider"
    RUNTIME = "runtime"
    SPEC = "spec"

    def __str__(self) -> str:
        return str(self.value)
