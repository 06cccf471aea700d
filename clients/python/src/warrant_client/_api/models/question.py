from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="Question")



@_attrs_define
class Question:
    """ A question the decider asked the person the run acts for, and its answer once given.

        Attributes:
            asked_at_ms (int): When it was asked.
            id (str): `<run>-q<n>`.
            prompt (str): What was asked.
            schema (Any): The schema the answer must satisfy.
            answer (Any | Unset): The answer, once given.
            answered_at_ms (int | None | Unset): When.
            by (None | str | Unset): Who answered.
     """

    asked_at_ms: int
    id: str
    prompt: str
    schema: Any
    answer: Any | Unset = UNSET
    answered_at_ms: int | None | Unset = UNSET
    by: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        asked_at_ms = self.asked_at_ms

        id = self.id

        prompt = self.prompt

        schema = self.schema

        answer = self.answer

        answered_at_ms: int | None | Unset
        if isinstance(self.answered_at_ms, Unset):
            answered_at_ms = UNSET
        else:
            answered_at_ms = self.answered_at_ms

        by: None | str | Unset
        if isinstance(self.by, Unset):
            by = UNSET
        else:
            by = self.by


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "asked_at_ms": asked_at_ms,
            "id": id,
            "prompt": prompt,
            "schema": schema,
        })
        if answer is not UNSET:
            field_dict["answer"] = answer
        if answered_at_ms is not UNSET:
            field_dict["answered_at_ms"] = answered_at_ms
        if by is not UNSET:
            field_dict["by"] = by

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        asked_at_ms = d.pop("asked_at_ms")

        id = d.pop("id")

        prompt = d.pop("prompt")

        schema = d.pop("schema")

        answer = d.pop("answer", UNSET)

        def _parse_answered_at_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        answered_at_ms = _parse_answered_at_ms(d.pop("answered_at_ms", UNSET))


        def _parse_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        by = _parse_by(d.pop("by", UNSET))


        question = cls(
            asked_at_ms=asked_at_ms,
            id=id,
            prompt=prompt,
            schema=schema,
            answer=answer,
            answered_at_ms=answered_at_ms,
            by=by,
        )


        question.additional_properties = d
        return question

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
