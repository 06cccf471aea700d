from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="UsageSum")



@_attrs_define
class UsageSum:
    """ What decisions reported they used, summed: a run's or a step's evidence of its spending.

        Attributes:
            cost_micro_usd (int): What the priced decisions cost, in micro-dollars (from the model table's prices).
            decisions (int): Decisions whose decider reported usage (a scripted decider reports none).
            input_tokens (int): Input tokens.
            output_tokens (int): Output tokens (reasoning included).
            cached_tokens (int | Unset): Input tokens served from the provider's cache (part of `input_tokens`).
            reasoning_tokens (int | Unset): Output tokens spent reasoning (part of `output_tokens`).
            unpriced (int | Unset): Decisions reported with no price known for their model: their cost is not in
                `cost_micro_usd`.
     """

    cost_micro_usd: int
    decisions: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int | Unset = UNSET
    reasoning_tokens: int | Unset = UNSET
    unpriced: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        cost_micro_usd = self.cost_micro_usd

        decisions = self.decisions

        input_tokens = self.input_tokens

        output_tokens = self.output_tokens

        cached_tokens = self.cached_tokens

        reasoning_tokens = self.reasoning_tokens

        unpriced = self.unpriced


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "cost_micro_usd": cost_micro_usd,
            "decisions": decisions,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
        })
        if cached_tokens is not UNSET:
            field_dict["cached_tokens"] = cached_tokens
        if reasoning_tokens is not UNSET:
            field_dict["reasoning_tokens"] = reasoning_tokens
        if unpriced is not UNSET:
            field_dict["unpriced"] = unpriced

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cost_micro_usd = d.pop("cost_micro_usd")

        decisions = d.pop("decisions")

        input_tokens = d.pop("input_tokens")

        output_tokens = d.pop("output_tokens")

        cached_tokens = d.pop("cached_tokens", UNSET)

        reasoning_tokens = d.pop("reasoning_tokens", UNSET)

        unpriced = d.pop("unpriced", UNSET)

        usage_sum = cls(
            cost_micro_usd=cost_micro_usd,
            decisions=decisions,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached_tokens=cached_tokens,
            reasoning_tokens=reasoning_tokens,
            unpriced=unpriced,
        )


        usage_sum.additional_properties = d
        return usage_sum

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
