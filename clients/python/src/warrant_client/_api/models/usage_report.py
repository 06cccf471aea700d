from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="UsageReport")



@_attrs_define
class UsageReport:
    """ What a run spent on its decider, as evidence: what its own decisions reported, what its
    children spent, and the limits both count against.

        Attributes:
            cost_micro_usd (int): What the priced decisions cost, in micro-dollars (from the model table's prices).
            decisions (int): Decisions whose decider reported usage (a scripted decider reports none).
            input_tokens (int): Input tokens.
            output_tokens (int): Output tokens (reasoning included).
            cached_tokens (int | Unset): Input tokens served from the provider's cache (part of `input_tokens`).
            children_cost_micro_usd (int | Unset): What its ended children cost, in micro-dollars.
            children_tokens (int | Unset): Tokens its ended children spent (their own children's included).
            cost_micro_usd_max (int | None | Unset): `limits.cost_micro_usd_max`, when set.
            reasoning_tokens (int | Unset): Output tokens spent reasoning (part of `output_tokens`).
            tokens_max (int | None | Unset): `limits.tokens_max`, when set: what the run and its children may use together.
            unpriced (int | Unset): Decisions reported with no price known for their model: their cost is not in
                `cost_micro_usd`.
     """

    cost_micro_usd: int
    decisions: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int | Unset = UNSET
    children_cost_micro_usd: int | Unset = UNSET
    children_tokens: int | Unset = UNSET
    cost_micro_usd_max: int | None | Unset = UNSET
    reasoning_tokens: int | Unset = UNSET
    tokens_max: int | None | Unset = UNSET
    unpriced: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        cost_micro_usd = self.cost_micro_usd

        decisions = self.decisions

        input_tokens = self.input_tokens

        output_tokens = self.output_tokens

        cached_tokens = self.cached_tokens

        children_cost_micro_usd = self.children_cost_micro_usd

        children_tokens = self.children_tokens

        cost_micro_usd_max: int | None | Unset
        if isinstance(self.cost_micro_usd_max, Unset):
            cost_micro_usd_max = UNSET
        else:
            cost_micro_usd_max = self.cost_micro_usd_max

        reasoning_tokens = self.reasoning_tokens

        tokens_max: int | None | Unset
        if isinstance(self.tokens_max, Unset):
            tokens_max = UNSET
        else:
            tokens_max = self.tokens_max

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
        if children_cost_micro_usd is not UNSET:
            field_dict["children_cost_micro_usd"] = children_cost_micro_usd
        if children_tokens is not UNSET:
            field_dict["children_tokens"] = children_tokens
        if cost_micro_usd_max is not UNSET:
            field_dict["cost_micro_usd_max"] = cost_micro_usd_max
        if reasoning_tokens is not UNSET:
            field_dict["reasoning_tokens"] = reasoning_tokens
        if tokens_max is not UNSET:
            field_dict["tokens_max"] = tokens_max
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

        children_cost_micro_usd = d.pop("children_cost_micro_usd", UNSET)

        children_tokens = d.pop("children_tokens", UNSET)

        def _parse_cost_micro_usd_max(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cost_micro_usd_max = _parse_cost_micro_usd_max(d.pop("cost_micro_usd_max", UNSET))


        reasoning_tokens = d.pop("reasoning_tokens", UNSET)

        def _parse_tokens_max(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        tokens_max = _parse_tokens_max(d.pop("tokens_max", UNSET))


        unpriced = d.pop("unpriced", UNSET)

        usage_report = cls(
            cost_micro_usd=cost_micro_usd,
            decisions=decisions,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached_tokens=cached_tokens,
            children_cost_micro_usd=children_cost_micro_usd,
            children_tokens=children_tokens,
            cost_micro_usd_max=cost_micro_usd_max,
            reasoning_tokens=reasoning_tokens,
            tokens_max=tokens_max,
            unpriced=unpriced,
        )


        usage_report.additional_properties = d
        return usage_report

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
