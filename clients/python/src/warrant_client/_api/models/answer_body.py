from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="AnswerBody")



@_attrs_define
class AnswerBody:
    """ `POST /v1/questions/{id}/answer` body.

        Attributes:
            answer (Any): The answer: JSON that fits the question's schema.
     """

    answer: Any





    def to_dict(self) -> dict[str, Any]:
        answer = self.answer


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "answer": answer,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        answer = d.pop("answer")

        answer_body = cls(
            answer=answer,
        )

        return answer_body

