from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="AnswerResult")



@_attrs_define
class AnswerResult:
    """ What became of an answer.

        Attributes:
            recorded (bool): `false` when the same answer was recorded before (nothing changed).
            request (str): The request.
            status (str): `approved` or `denied`.
     """

    recorded: bool
    request: str
    status: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        recorded = self.recorded

        request = self.request

        status = self.status


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "recorded": recorded,
            "request": request,
            "status": status,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        recorded = d.pop("recorded")

        request = d.pop("request")

        status = d.pop("status")

        answer_result = cls(
            recorded=recorded,
            request=request,
            status=status,
        )


        answer_result.additional_properties = d
        return answer_result

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
