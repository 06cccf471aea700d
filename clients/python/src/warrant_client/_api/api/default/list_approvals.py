from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.approval_row import ApprovalRow
from ...models.problem import Problem
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    run: None | str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_run: None | str | Unset
    if isinstance(run, Unset):
        json_run = UNSET
    else:
        json_run = run
    params["run"] = json_run


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/approvals",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | list[ApprovalRow]:
    if response.status_code == 200:
        response_200 = []
        _response_200 = response.json()
        for response_200_item_data in (_response_200):
            response_200_item = ApprovalRow.from_dict(response_200_item_data)



            response_200.append(response_200_item)

        return response_200

    response_default = Problem.from_dict(response.json())



    return response_default



def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | list[ApprovalRow]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    run: None | str | Unset = UNSET,

) -> Response[Problem | list[ApprovalRow]]:
    """ Pending approval requests of the tenant, or every request of one run.

    Args:
        run (None | str | Unset): Every request of this run (answered or not); else the pending
            ones of every run.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | list[ApprovalRow]]
     """


    kwargs = _get_kwargs(
        run=run,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    run: None | str | Unset = UNSET,

) -> Problem | list[ApprovalRow] | None:
    """ Pending approval requests of the tenant, or every request of one run.

    Args:
        run (None | str | Unset): Every request of this run (answered or not); else the pending
            ones of every run.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | list[ApprovalRow]
     """


    return sync_detailed(
        client=client,
run=run,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    run: None | str | Unset = UNSET,

) -> Response[Problem | list[ApprovalRow]]:
    """ Pending approval requests of the tenant, or every request of one run.

    Args:
        run (None | str | Unset): Every request of this run (answered or not); else the pending
            ones of every run.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | list[ApprovalRow]]
     """


    kwargs = _get_kwargs(
        run=run,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    run: None | str | Unset = UNSET,

) -> Problem | list[ApprovalRow] | None:
    """ Pending approval requests of the tenant, or every request of one run.

    Args:
        run (None | str | Unset): Every request of this run (answered or not); else the pending
            ones of every run.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | list[ApprovalRow]
     """


    return (await asyncio_detailed(
        client=client,
run=run,

    )).parsed
