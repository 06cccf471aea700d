""" Contains all the data models used in inputs/outputs """

from .answer_body import AnswerBody
from .answer_result import AnswerResult
from .approval_row import ApprovalRow
from .approval_state import ApprovalState
from .approvals_query import ApprovalsQuery
from .approve_body import ApproveBody
from .arg_constraint import ArgConstraint
from .arg_label_type_0 import ArgLabelType0
from .arg_label_type_1 import ArgLabelType1
from .arg_label_type_2 import ArgLabelType2
from .arg_label_type_3 import ArgLabelType3
from .arg_label_type_4 import ArgLabelType4
from .arg_label_type_5 import ArgLabelType5
from .arg_label_type_6 import ArgLabelType6
from .arg_label_type_7 import ArgLabelType7
from .arg_label_type_8 import ArgLabelType8
from .audit_entry import AuditEntry
from .audit_query import AuditQuery
from .budget import Budget
from .build_info import BuildInfo
from .call_report import CallReport
from .call_status import CallStatus
from .cancel_body import CancelBody
from .carried_report import CarriedReport
from .catalog_spec import CatalogSpec
from .child_report import ChildReport
from .decider_identity import DeciderIdentity
from .deny_body import DenyBody
from .doubt_row import DoubtRow
from .effect import Effect
from .event import Event
from .event_type import EventType
from .events_page import EventsPage
from .events_query import EventsQuery
from .failure_report import FailureReport
from .fault import Fault
from .get_open_api_response_200 import GetOpenApiResponse200
from .grant_source import GrantSource
from .grants_query import GrantsQuery
from .last_event import LastEvent
from .layer import Layer
from .lineage import Lineage
from .missing import Missing
from .new_grant import NewGrant
from .new_grant_args import NewGrantArgs
from .outcome_type_0 import OutcomeType0
from .outcome_type_1 import OutcomeType1
from .outcome_type_2 import OutcomeType2
from .outcome_type_3 import OutcomeType3
from .outcome_type_4 import OutcomeType4
from .outcome_type_5 import OutcomeType5
from .parent_report import ParentReport
from .pending_question import PendingQuestion
from .problem import Problem
from .provider_question import ProviderQuestion
from .question import Question
from .question_answer import QuestionAnswer
from .reconcile_body import ReconcileBody
from .requirement_report import RequirementReport
from .revoked import Revoked
from .run_ref import RunRef
from .run_report import RunReport
from .run_status import RunStatus
from .run_summary import RunSummary
from .run_view import RunView
from .runs_page import RunsPage
from .runs_query import RunsQuery
from .schedule_view import ScheduleView
from .schedule_view_inputs import ScheduleViewInputs
from .source_type_0 import SourceType0
from .source_type_1 import SourceType1
from .source_type_2 import SourceType2
from .source_type_3 import SourceType3
from .source_type_4 import SourceType4
from .source_type_5 import SourceType5
from .source_type_6 import SourceType6
from .source_type_7 import SourceType7
from .source_type_8 import SourceType8
from .spec_ref import SpecRef
from .spent import Spent
from .standing_grant import StandingGrant
from .standing_grant_args import StandingGrantArgs
from .start_run import StartRun
from .start_run_inputs import StartRunInputs
from .step_answer import StepAnswer
from .step_report import StepReport
from .step_row import StepRow
from .tick import Tick
from .tick_state import TickState
from .timings import Timings
from .unsettled_report import UnsettledReport
from .usage_report import UsageReport
from .usage_sum import UsageSum

__all__ = (
    "AnswerBody",
    "AnswerResult",
    "ApprovalRow",
    "ApprovalsQuery",
    "ApprovalState",
    "ApproveBody",
    "ArgConstraint",
    "ArgLabelType0",
    "ArgLabelType1",
    "ArgLabelType2",
    "ArgLabelType3",
    "ArgLabelType4",
    "ArgLabelType5",
    "ArgLabelType6",
    "ArgLabelType7",
    "ArgLabelType8",
    "AuditEntry",
    "AuditQuery",
    "Budget",
    "BuildInfo",
    "CallReport",
    "CallStatus",
    "CancelBody",
    "CarriedReport",
    "CatalogSpec",
    "ChildReport",
    "DeciderIdentity",
    "DenyBody",
    "DoubtRow",
    "Effect",
    "Event",
    "EventsPage",
    "EventsQuery",
    "EventType",
    "FailureReport",
    "Fault",
    "GetOpenApiResponse200",
    "GrantSource",
    "GrantsQuery",
    "LastEvent",
    "Layer",
    "Lineage",
    "Missing",
    "NewGrant",
    "NewGrantArgs",
    "OutcomeType0",
    "OutcomeType1",
    "OutcomeType2",
    "OutcomeType3",
    "OutcomeType4",
    "OutcomeType5",
    "ParentReport",
    "PendingQuestion",
    "Problem",
    "ProviderQuestion",
    "Question",
    "QuestionAnswer",
    "ReconcileBody",
    "RequirementReport",
    "Revoked",
    "RunRef",
    "RunReport",
    "RunsPage",
    "RunsQuery",
    "RunStatus",
    "RunSummary",
    "RunView",
    "ScheduleView",
    "ScheduleViewInputs",
    "SourceType0",
    "SourceType1",
    "SourceType2",
    "SourceType3",
    "SourceType4",
    "SourceType5",
    "SourceType6",
    "SourceType7",
    "SourceType8",
    "SpecRef",
    "Spent",
    "StandingGrant",
    "StandingGrantArgs",
    "StartRun",
    "StartRunInputs",
    "StepAnswer",
    "StepReport",
    "StepRow",
    "Tick",
    "TickState",
    "Timings",
    "UnsettledReport",
    "UsageReport",
    "UsageSum",
)
