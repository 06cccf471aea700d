from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.events_page import EventsPage
from ...models.problem import Problem
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    id: str,
    *,
    from_: int | None | Unset = UNSET,
    limit: int | None | Unset = UNSET,
    last_event_id: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(last_event_id, Unset):
        headers["Last-Event-ID"] = last_event_id



    

    params: dict[str, Any] = {}

    json_from_: int | None | Unset
    if isinstance(from_, Unset):
        json_from_ = UNSET
    else:
        json_from_ = from_
    params["from"] = json_from_

    json_limit: int | None | Unset
    if isinstance(limit, Unset):
        json_limit = UNSET
    else:
        json_limit = limit
    params["limit"] = json_limit


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/runs/{id}/events".format(id=quote(str(id), safe=""),),
        "params": params,
    }


    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> EventsPage | Problem:
    if response.status_code == 200:
        response_200 = EventsPage.from_dict(response.json())



        return response_200

    response_default = Problem.from_dict(response.json())



    return response_default



def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[EventsPage | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: str,
    *,
    client: AuthenticatedClient,
    from_: int | None | Unset = UNSET,
    limit: int | None | Unset = UNSET,
    last_event_id: str | Unset = UNSET,

) -> Response[EventsPage | Problem]:
    """ The run's events: a JSON page, or Server-Sent Events with `Accept: text/event-stream` (id = sequence
    number; resume with `Last-Event-ID` or `?from=`; closes after the last event).

    Args:
        id (str):
        from_ (int | None | Unset): The first sequence number wanted (default 1).
        limit (int | None | Unset): Most events on a JSON page (default and most 1000).
        last_event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EventsPage | Problem]
     """


    kwargs = _get_kwargs(
        id=id,
from_=from_,
limit=limit,
last_event_id=last_event_id,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    id: str,
    *,
    client: AuthenticatedClient,
    from_: int | None | Unset = UNSET,
    limit: int | None | Unset = UNSET,
    last_event_id: str | Unset = UNSET,

) -> EventsPage | Problem | None:
    """ The run's events: a JSON page, or Server-Sent Events with `Accept: text/event-stream` (id = sequence
    number; resume with `Last-Event-ID` or `?from=`; closes after the last event).

    Args:
        id (str):
        from_ (int | None | Unset): The first sequence number wanted (default 1).
        limit (int | None | Unset): Most events on a JSON page (default and most 1000).
        last_event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EventsPage | Problem
     """


    return sync_detailed(
        id=id,
client=client,
from_=from_,
limit=limit,
last_event_id=last_event_id,

    ).parsed

async def asyncio_detailed(
    id: str,
    *,
    client: AuthenticatedClient,
    from_: int | None | Unset = UNSET,
    limit: int | None | Unset = UNSET,
    last_event_id: str | Unset = UNSET,

) -> Response[EventsPage | Problem]:
    """ The run's events: a JSON page, or Server-Sent Events with `Accept: text/event-stream` (id = sequence
    number; resume with `Last-Event-ID` or `?from=`; closes after the last event).

    Args:
        id (str):
        from_ (int | None | Unset): The first sequence number wanted (default 1).
        limit (int | None | Unset): Most events on a JSON page (default and most 1000).
        last_event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EventsPage | Problem]
     """


    kwargs = _get_kwargs(
        id=id,
from_=from_,
limit=limit,
last_event_id=last_event_id,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    id: str,
    *,
    client: AuthenticatedClient,
    from_: int | None | Unset = UNSET,
    limit: int | None | Unset = UNSET,
    last_event_id: str | Unset = UNSET,

) -> EventsPage | Problem | None:
    """ The run's events: a JSON page, or Server-Sent Events with `Accept: text/event-stream` (id = sequence
    number; resume with `Last-Event-ID` or `?from=`; closes after the last event).

    Args:
        id (str):
        from_ (int | None | Unset): The first sequence number wanted (default 1).
        limit (int | None | Unset): Most events on a JSON page (default and most 1000).
        last_event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EventsPage | Problem
     """


    return (await asyncio_detailed(
        id=id,
client=client,
from_=from_,
limit=limit,
last_event_id=last_event_id,

    )).parsed
