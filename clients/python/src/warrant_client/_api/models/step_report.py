from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.call_report import CallReport
  from ..models.fault import Fault
  from ..models.step_answer import StepAnswer
  from ..models.usage_sum import UsageSum





T = TypeVar("T", bound="StepReport")



@_attrs_define
class StepReport:
    """ One step's evidence.

        Attributes:
            calls (list[CallReport]): Its calls.
            commit_required (bool): Must commit.
            decisions (int): Decisions taken in it.
            id (str): Identifies a step within a spec.
            provider (str): Its provider.
            required (bool): Counts toward terminal.
            status (str): `pending`, `running`, `attained`, `not_attained` or `skipped`.
            answer (None | StepAnswer | Unset): What the decider said when it ended the step.
            blocked_by (None | str | Unset): For a skipped step: the dependency not attained.
            elapsed_ms (int | None | Unset): Milliseconds it took.
            fault (Fault | None | Unset): Why it was not attained or was skipped.
            usage (UsageSum | Unset): What decisions reported they used, summed: a run's or a step's evidence of its
                spending.
     """

    calls: list[CallReport]
    commit_required: bool
    decisions: int
    id: str
    provider: str
    required: bool
    status: str
    answer: None | StepAnswer | Unset = UNSET
    blocked_by: None | str | Unset = UNSET
    elapsed_ms: int | None | Unset = UNSET
    fault: Fault | None | Unset = UNSET
    usage: UsageSum | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.call_report import CallReport # noqa: PLC0415
        from ..models.fault import Fault # noqa: PLC0415
        from ..models.step_answer import StepAnswer # noqa: PLC0415
        from ..models.usage_sum import UsageSum # noqa: PLC0415
        calls = []
        for calls_item_data in self.calls:
            calls_item = calls_item_data.to_dict()
            calls.append(calls_item)



        commit_required = self.commit_required

        decisions = self.decisions

        id = self.id

        provider = self.provider

        required = self.required

        status = self.status

        answer: dict[str, Any] | None | Unset
        if isinstance(self.answer, Unset):
            answer = UNSET
        elif isinstance(self.answer, StepAnswer):
            answer = self.answer.to_dict()
        else:
            answer = self.answer

        blocked_by: None | str | Unset
        if isinstance(self.blocked_by, Unset):
            blocked_by = UNSET
        else:
            blocked_by = self.blocked_by

        elapsed_ms: int | None | Unset
        if isinstance(self.elapsed_ms, Unset):
            elapsed_ms = UNSET
        else:
            elapsed_ms = self.elapsed_ms

        fault: dict[str, Any] | None | Unset
        if isinstance(self.fault, Unset):
            fault = UNSET
        elif isinstance(self.fault, Fault):
            fault = self.fault.to_dict()
        else:
            fault = self.fault

        usage: dict[str, Any] | Unset = UNSET
        if not isinstance(self.usage, Unset):
            usage = self.usage.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "calls": calls,
            "commit_required": commit_required,
            "decisions": decisions,
            "id": id,
            "provider": provider,
            "required": required,
            "status": status,
        })
        if answer is not UNSET:
            field_dict["answer"] = answer
        if blocked_by is not UNSET:
            field_dict["blocked_by"] = blocked_by
        if elapsed_ms is not UNSET:
            field_dict["elapsed_ms"] = elapsed_ms
        if fault is not UNSET:
            field_dict["fault"] = fault
        if usage is not UNSET:
            field_dict["usage"] = usage

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.call_report import CallReport # noqa: PLC0415
        from ..models.fault import Fault # noqa: PLC0415
        from ..models.step_answer import StepAnswer # noqa: PLC0415
        from ..models.usage_sum import UsageSum # noqa: PLC0415
        d = dict(src_dict)
        calls = []
        _calls = d.pop("calls")
        for calls_item_data in (_calls):
            calls_item = CallReport.from_dict(calls_item_data)



            calls.append(calls_item)


        commit_required = d.pop("commit_required")

        decisions = d.pop("decisions")

        id = d.pop("id")

        provider = d.pop("provider")

        required = d.pop("required")

        status = d.pop("status")

        def _parse_answer(data: object) -> None | StepAnswer | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                answer_type_0 = StepAnswer.from_dict(data)



                return answer_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StepAnswer | Unset, data)

        answer = _parse_answer(d.pop("answer", UNSET))


        def _parse_blocked_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        blocked_by = _parse_blocked_by(d.pop("blocked_by", UNSET))


        def _parse_elapsed_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        elapsed_ms = _parse_elapsed_ms(d.pop("elapsed_ms", UNSET))


        def _parse_fault(data: object) -> Fault | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                fault_type_0 = Fault.from_dict(data)



                return fault_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Fault | None | Unset, data)

        fault = _parse_fault(d.pop("fault", UNSET))


        _usage = d.pop("usage", UNSET)
        usage: UsageSum | Unset
        if isinstance(_usage,  Unset):
            usage = UNSET
        else:
            usage = UsageSum.from_dict(_usage)




        step_report = cls(
            calls=calls,
            commit_required=commit_required,
            decisions=decisions,
            id=id,
            provider=provider,
            required=required,
            status=status,
            answer=answer,
            blocked_by=blocked_by,
            elapsed_ms=elapsed_ms,
            fault=fault,
            usage=usage,
        )


        step_report.additional_properties = d
        return step_report

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
