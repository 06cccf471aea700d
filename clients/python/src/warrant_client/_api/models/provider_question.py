from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="ProviderQuestion")



@_attrs_define
class ProviderQuestion:
    """ What a provider asked the person during a call (`provider_asked`), and what they said.

        Attributes:
            action (str): `accept`, `decline`, `cancel`, or `unasked`.
            at_ms (int): When.
            call (str):
            message (str): What it asked.
            schema (Any): The form of the answer it asked for.
            answer (Any | Unset): The answer, when they accepted.
     """

    action: str
    at_ms: int
    call: str
    message: str
    schema: Any
    answer: Any | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        action = self.action

        at_ms = self.at_ms

        call = self.call

        message = self.message

        schema = self.schema

        answer = self.answer


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "action": action,
            "at_ms": at_ms,
            "call": call,
            "message": message,
            "schema": schema,
        })
        if answer is not UNSET:
            field_dict["answer"] = answer

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        action = d.pop("action")

        at_ms = d.pop("at_ms")

        call = d.pop("call")

        message = d.pop("message")

        schema = d.pop("schema")

        answer = d.pop("answer", UNSET)

        provider_question = cls(
            action=action,
            at_ms=at_ms,
            call=call,
            message=message,
            schema=schema,
            answer=answer,
        )


        provider_question.additional_properties = d
        return provider_question

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
