from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.call_status import CallStatus
from ..models.effect import Effect
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.arg_label_type_0 import ArgLabelType0
  from ..models.arg_label_type_1 import ArgLabelType1
  from ..models.arg_label_type_2 import ArgLabelType2
  from ..models.arg_label_type_3 import ArgLabelType3
  from ..models.arg_label_type_4 import ArgLabelType4
  from ..models.arg_label_type_5 import ArgLabelType5
  from ..models.arg_label_type_6 import ArgLabelType6
  from ..models.arg_label_type_7 import ArgLabelType7
  from ..models.arg_label_type_8 import ArgLabelType8
  from ..models.fault import Fault





T = TypeVar("T", bound="CallReport")



@_attrs_define
class CallReport:
    """ One call's evidence.

        Attributes:
            call (str):
            proposed_digest (str): Digest of the proposed arguments.
            tool (str): The tool.
            context_taint (list[str] | Unset): The untrusted providers whose text the decider had read when it proposed the
                call
                (provenance rules 2; empty when its context was trusted).
            effect (Effect | None | Unset): Read or commit (absent when it never dispatched).
            elapsed_ms (int | None | Unset): Milliseconds from start to finish.
            executed_digest (None | str | Unset): Digest of the executed arguments.
            fault (Fault | None | Unset): The structured error.
            provenance (list[ArgLabelType0 | ArgLabelType1 | ArgLabelType2 | ArgLabelType3 | ArgLabelType4 | ArgLabelType5 |
                ArgLabelType6 | ArgLabelType7 | ArgLabelType8] | Unset): Where each executed argument value was observed.
            status (CallStatus | None | Unset): How it ended (absent while in flight).
     """

    call: str
    proposed_digest: str
    tool: str
    context_taint: list[str] | Unset = UNSET
    effect: Effect | None | Unset = UNSET
    elapsed_ms: int | None | Unset = UNSET
    executed_digest: None | str | Unset = UNSET
    fault: Fault | None | Unset = UNSET
    provenance: list[ArgLabelType0 | ArgLabelType1 | ArgLabelType2 | ArgLabelType3 | ArgLabelType4 | ArgLabelType5 | ArgLabelType6 | ArgLabelType7 | ArgLabelType8] | Unset = UNSET
    status: CallStatus | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.arg_label_type_0 import ArgLabelType0 # noqa: PLC0415
        from ..models.arg_label_type_1 import ArgLabelType1 # noqa: PLC0415
        from ..models.arg_label_type_2 import ArgLabelType2 # noqa: PLC0415
        from ..models.arg_label_type_3 import ArgLabelType3 # noqa: PLC0415
        from ..models.arg_label_type_4 import ArgLabelType4 # noqa: PLC0415
        from ..models.arg_label_type_5 import ArgLabelType5 # noqa: PLC0415
        from ..models.arg_label_type_6 import ArgLabelType6 # noqa: PLC0415
        from ..models.arg_label_type_7 import ArgLabelType7 # noqa: PLC0415
        from ..models.arg_label_type_8 import ArgLabelType8 # noqa: PLC0415
        from ..models.fault import Fault # noqa: PLC0415
        call = self.call

        proposed_digest = self.proposed_digest

        tool = self.tool

        context_taint: list[str] | Unset = UNSET
        if not isinstance(self.context_taint, Unset):
            context_taint = self.context_taint



        effect: None | str | Unset
        if isinstance(self.effect, Unset):
            effect = UNSET
        elif isinstance(self.effect, Effect):
            effect = self.effect.value
        else:
            effect = self.effect

        elapsed_ms: int | None | Unset
        if isinstance(self.elapsed_ms, Unset):
            elapsed_ms = UNSET
        else:
            elapsed_ms = self.elapsed_ms

        executed_digest: None | str | Unset
        if isinstance(self.executed_digest, Unset):
            executed_digest = UNSET
        else:
            executed_digest = self.executed_digest

        fault: dict[str, Any] | None | Unset
        if isinstance(self.fault, Unset):
            fault = UNSET
        elif isinstance(self.fault, Fault):
            fault = self.fault.to_dict()
        else:
            fault = self.fault

        provenance: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.provenance, Unset):
            provenance = []
            for provenance_item_data in self.provenance:
                provenance_item: dict[str, Any]
                if isinstance(provenance_item_data, ArgLabelType0):
                    provenance_item = provenance_item_data.to_dict()
                elif isinstance(provenance_item_data, ArgLabelType1):
                    provenance_item = provenance_item_data.to_dict()
                elif isinstance(provenance_item_data, ArgLabelType2):
                    provenance_item = provenance_item_data.to_dict()
                elif isinstance(provenance_item_data, ArgLabelType3):
                    provenance_item = provenance_item_data.to_dict()
                elif isinstance(provenance_item_data, ArgLabelType4):
                    provenance_item = provenance_item_data.to_dict()
                elif isinstance(provenance_item_data, ArgLabelType5):
                    provenance_item = provenance_item_data.to_dict()
                elif isinstance(provenance_item_data, ArgLabelType6):
                    provenance_item = provenance_item_data.to_dict()
                elif isinstance(provenance_item_data, ArgLabelType7):
                    provenance_item = provenance_item_data.to_dict()
                else:
                    provenance_item = provenance_item_data.to_dict()

                provenance.append(provenance_item)



        status: None | str | Unset
        if isinstance(self.status, Unset):
            status = UNSET
        elif isinstance(self.status, CallStatus):
            status = self.status.value
        else:
            status = self.status


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "call": call,
            "proposed_digest": proposed_digest,
            "tool": tool,
        })
        if context_taint is not UNSET:
            field_dict["context_taint"] = context_taint
        if effect is not UNSET:
            field_dict["effect"] = effect
        if elapsed_ms is not UNSET:
            field_dict["elapsed_ms"] = elapsed_ms
        if executed_digest is not UNSET:
            field_dict["executed_digest"] = executed_digest
        if fault is not UNSET:
            field_dict["fault"] = fault
        if provenance is not UNSET:
            field_dict["provenance"] = provenance
        if status is not UNSET:
            field_dict["status"] = status

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.arg_label_type_0 import ArgLabelType0 # noqa: PLC0415
        from ..models.arg_label_type_1 import ArgLabelType1 # noqa: PLC0415
        from ..models.arg_label_type_2 import ArgLabelType2 # noqa: PLC0415
        from ..models.arg_label_type_3 import ArgLabelType3 # noqa: PLC0415
        from ..models.arg_label_type_4 import ArgLabelType4 # noqa: PLC0415
        from ..models.arg_label_type_5 import ArgLabelType5 # noqa: PLC0415
        from ..models.arg_label_type_6 import ArgLabelType6 # noqa: PLC0415
        from ..models.arg_label_type_7 import ArgLabelType7 # noqa: PLC0415
        from ..models.arg_label_type_8 import ArgLabelType8 # noqa: PLC0415
        from ..models.fault import Fault # noqa: PLC0415
        d = dict(src_dict)
        call = d.pop("call")

        proposed_digest = d.pop("proposed_digest")

        tool = d.pop("tool")

        context_taint = cast(list[str], d.pop("context_taint", UNSET))


        def _parse_effect(data: object) -> Effect | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                effect_type_0 = Effect(data)



                return effect_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Effect | None | Unset, data)

        effect = _parse_effect(d.pop("effect", UNSET))


        def _parse_elapsed_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        elapsed_ms = _parse_elapsed_ms(d.pop("elapsed_ms", UNSET))


        def _parse_executed_digest(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        executed_digest = _parse_executed_digest(d.pop("executed_digest", UNSET))


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


        _provenance = d.pop("provenance", UNSET)
        provenance: list[ArgLabelType0 | ArgLabelType1 | ArgLabelType2 | ArgLabelType3 | ArgLabelType4 | ArgLabelType5 | ArgLabelType6 | ArgLabelType7 | ArgLabelType8] | Unset = UNSET
        if _provenance is not UNSET:
            provenance = []
            for provenance_item_data in _provenance:
                def _parse_provenance_item(data: object) -> ArgLabelType0 | ArgLabelType1 | ArgLabelType2 | ArgLabelType3 | ArgLabelType4 | ArgLabelType5 | ArgLabelType6 | ArgLabelType7 | ArgLabelType8:
                    try:
                        if not isinstance(data, dict):
                            raise TypeError()
                        componentsschemas_arg_label_type_0 = ArgLabelType0.from_dict(data)



                        return componentsschemas_arg_label_type_0
                    except (TypeError, ValueError, AttributeError, KeyError):
                        pass
                    try:
                        if not isinstance(data, dict):
                            raise TypeError()
                        componentsschemas_arg_label_type_1 = ArgLabelType1.from_dict(data)



                        return componentsschemas_arg_label_type_1
                    except (TypeError, ValueError, AttributeError, KeyError):
                        pass
                    try:
                        if not isinstance(data, dict):
                            raise TypeError()
                        componentsschemas_arg_label_type_2 = ArgLabelType2.from_dict(data)



                        return componentsschemas_arg_label_type_2
                    except (TypeError, ValueError, AttributeError, KeyError):
                        pass
                    try:
                        if not isinstance(data, dict):
                            raise TypeError()
                        componentsschemas_arg_label_type_3 = ArgLabelType3.from_dict(data)



                        return componentsschemas_arg_label_type_3
                    except (TypeError, ValueError, AttributeError, KeyError):
                        pass
                    try:
                        if not isinstance(data, dict):
                            raise TypeError()
                        componentsschemas_arg_label_type_4 = ArgLabelType4.from_dict(data)



                        return componentsschemas_arg_label_type_4
                    except (TypeError, ValueError, AttributeError, KeyError):
                        pass
                    try:
                        if not isinstance(data, dict):
                            raise TypeError()
                        componentsschemas_arg_label_type_5 = ArgLabelType5.from_dict(data)



                        return componentsschemas_arg_label_type_5
                    except (TypeError, ValueError, AttributeError, KeyError):
                        pass
                    try:
                        if not isinstance(data, dict):
                            raise TypeError()
                        componentsschemas_arg_label_type_6 = ArgLabelType6.from_dict(data)



                        return componentsschemas_arg_label_type_6
                    except (TypeError, ValueError, AttributeError, KeyError):
                        pass
                    try:
                        if not isinstance(data, dict):
                            raise TypeError()
                        componentsschemas_arg_label_type_7 = ArgLabelType7.from_dict(data)



                        return componentsschemas_arg_label_type_7
                    except (TypeError, ValueError, AttributeError, KeyError):
                        pass
                    if not isinstance(data, dict):
                        raise TypeError()
                    componentsschemas_arg_label_type_8 = ArgLabelType8.from_dict(data)



                    return componentsschemas_arg_label_type_8

                provenance_item = _parse_provenance_item(provenance_item_data)

                provenance.append(provenance_item)


        def _parse_status(data: object) -> CallStatus | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                status_type_0 = CallStatus(data)



                return status_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CallStatus | None | Unset, data)

        status = _parse_status(d.pop("status", UNSET))


        call_report = cls(
            call=call,
            proposed_digest=proposed_digest,
            tool=tool,
            context_taint=context_taint,
            effect=effect,
            elapsed_ms=elapsed_ms,
            executed_digest=executed_digest,
            fault=fault,
            provenance=provenance,
            status=status,
        )


        call_report.additional_properties = d
        return call_report

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
