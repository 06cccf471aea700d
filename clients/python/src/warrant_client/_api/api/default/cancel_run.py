from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.cancel_body import CancelBody
from ...models.problem import Problem
from ...models.run_ref import RunRef
from typing import cast



def _get_kwargs(
    id: str,
    *,
    body: CancelBody,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/runs/{id}/cancel".format(id=quote(str(id), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | RunRef:
    if response.status_code == 200:
        response_200 = RunRef.from_dict(response.json())



        return response_200

    if response.status_code == 202:
        response_202 = RunRef.from_dict(response.json())



        return response_202

    response_default = Problem.from_dict(response.json())



    return response_default



def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | RunRef]:
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
    body: CancelBody,

) -> Response[Problem | RunRef]:
    """ Cancel a run (200 once cancelled; 202 while the process driving it has not acted).

    Args:
        id (str):
        body (CancelBody): `POST /v1/runs/{id}/cancel` body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RunRef]
     """


    kwargs = _get_kwargs(
        id=id,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    id: str,
    *,
    client: AuthenticatedClient,
    body: CancelBody,

) -> Problem | RunRef | None:
    """ Cancel a run (200 once cancelled; 202 while the process driving it has not acted).

    Args:
        id (str):
        body (CancelBody): `POST /v1/runs/{id}/cancel` body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RunRef
     """


    return sync_detailed(
        id=id,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    id: str,
    *,
    client: AuthenticatedClient,
    body: CancelBody,

) -> Response[Problem | RunRef]:
    """ Cancel a run (200 once cancelled; 202 while the process driving it has not acted).

    Args:
        id (str):
        body (CancelBody): `POST /v1/runs/{id}/cancel` body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RunRef]
     """


    kwargs = _get_kwargs(
        id=id,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    id: str,
    *,
    client: AuthenticatedClient,
    body: CancelBody,

) -> Problem | RunRef | None:
    """ Cancel a run (200 once cancelled; 202 while the process driving it has not acted).

    Args:
        id (str):
        body (CancelBody): `POST /v1/runs/{id}/cancel` body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RunRef
     """


    return (await asyncio_detailed(
        id=id,
client=client,
body=body,

    )).parsed
