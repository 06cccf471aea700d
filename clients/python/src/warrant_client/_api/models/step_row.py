from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.step_answer import StepAnswer





T = TypeVar("T", bound="StepRow")



@_attrs_define
class StepRow:
    """ One step, as `show` lists it.

        Attributes:
            calls (int): Its calls (the JSON gives their number).
            decisions (int): Decisions taken in it.
            id (str): Identifies a step within a spec.
            status (str): Where it stands.
            answer (None | StepAnswer | Unset): Its answer, when it gave one.
     """

    calls: int
    decisions: int
    id: str
    status: str
    answer: None | StepAnswer | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.step_answer import StepAnswer # noqa: PLC0415
        calls = self.calls

        decisions = self.decisions

        id = self.id

        status = self.status

        answer: dict[str, Any] | None | Unset
        if isinstance(self.answer, Unset):
            answer = UNSET
        elif isinstance(self.answer, StepAnswer):
            answer = self.answer.to_dict()
        else:
            answer = self.answer


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "calls": calls,
            "decisions": decisions,
            "id": id,
            "status": status,
        })
        if answer is not UNSET:
            field_dict["answer"] = answer

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.step_answer import StepAnswer # noqa: PLC0415
        d = dict(src_dict)
        calls = d.pop("calls")

        decisions = d.pop("decisions")

        id = d.pop("id")

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


        step_row = cls(
            calls=calls,
            decisions=decisions,
            id=id,
            status=status,
            answer=answer,
        )


        step_row.additional_properties = d
        return step_row

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
