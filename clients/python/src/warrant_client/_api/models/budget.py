from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="Budget")



@_attrs_define
class Budget:
    """ What a child may spend. Each limit it names (and each it does not, from its spec's own
    limits) is cut to what the parent has left when the child is spawned.

        Attributes:
            calls (int | None | Unset): Most tool calls.
            cost_micro_usd (int | None | Unset): Most cost, in micro-dollars.
            deadline_ms (int | None | Unset): Most wall-clock time from the child's start.
            decisions (int | None | Unset): Most decisions.
            tokens (int | None | Unset): Most tokens.
     """

    calls: int | None | Unset = UNSET
    cost_micro_usd: int | None | Unset = UNSET
    deadline_ms: int | None | Unset = UNSET
    decisions: int | None | Unset = UNSET
    tokens: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        calls: int | None | Unset
        if isinstance(self.calls, Unset):
            calls = UNSET
        else:
            calls = self.calls

        cost_micro_usd: int | None | Unset
        if isinstance(self.cost_micro_usd, Unset):
            cost_micro_usd = UNSET
        else:
            cost_micro_usd = self.cost_micro_usd

        deadline_ms: int | None | Unset
        if isinstance(self.deadline_ms, Unset):
            deadline_ms = UNSET
        else:
            deadline_ms = self.deadline_ms

        decisions: int | None | Unset
        if isinstance(self.decisions, Unset):
            decisions = UNSET
        else:
            decisions = self.decisions

        tokens: int | None | Unset
        if isinstance(self.tokens, Unset):
            tokens = UNSET
        else:
            tokens = self.tokens


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
        })
        if calls is not UNSET:
            field_dict["calls"] = calls
        if cost_micro_usd is not UNSET:
            field_dict["cost_micro_usd"] = cost_micro_usd
        if deadline_ms is not UNSET:
            field_dict["deadline_ms"] = deadline_ms
        if decisions is not UNSET:
            field_dict["decisions"] = decisions
        if tokens is not UNSET:
            field_dict["tokens"] = tokens

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_calls(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        calls = _parse_calls(d.pop("calls", UNSET))


        def _parse_cost_micro_usd(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cost_micro_usd = _parse_cost_micro_usd(d.pop("cost_micro_usd", UNSET))


        def _parse_deadline_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        deadline_ms = _parse_deadline_ms(d.pop("deadline_ms", UNSET))


        def _parse_decisions(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        decisions = _parse_decisions(d.pop("decisions", UNSET))


        def _parse_tokens(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        tokens = _parse_tokens(d.pop("tokens", UNSET))


        budget = cls(
            calls=calls,
            cost_micro_usd=cost_micro_usd,
            deadline_ms=deadline_ms,
            decisions=decisions,
            tokens=tokens,
        )


        budget.additional_properties = d
        return budget

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
