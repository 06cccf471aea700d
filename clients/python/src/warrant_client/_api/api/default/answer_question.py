from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.answer_body import AnswerBody
from ...models.problem import Problem
from ...models.question_answer import QuestionAnswer
from typing import cast



def _get_kwargs(
    id: str,
    *,
    body: AnswerBody,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/questions/{id}/answer".format(id=quote(str(id), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | QuestionAnswer:
    if response.status_code == 200:
        response_200 = QuestionAnswer.from_dict(response.json())



        return response_200

    response_default = Problem.from_dict(response.json())



    return response_default



def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | QuestionAnswer]:
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
    body: AnswerBody,

) -> Response[Problem | QuestionAnswer]:
    """ Answer a question: the answer must fit its schema (422 with the schema's reasons otherwise) and
    enters the run as the person's words; the run goes on.

    Args:
        id (str):
        body (AnswerBody): `POST /v1/questions/{id}/answer` body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | QuestionAnswer]
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
    body: AnswerBody,

) -> Problem | QuestionAnswer | None:
    """ Answer a question: the answer must fit its schema (422 with the schema's reasons otherwise) and
    enters the run as the person's words; the run goes on.

    Args:
        id (str):
        body (AnswerBody): `POST /v1/questions/{id}/answer` body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | QuestionAnswer
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
    body: AnswerBody,

) -> Response[Problem | QuestionAnswer]:
    """ Answer a question: the answer must fit its schema (422 with the schema's reasons otherwise) and
    enters the run as the person's words; the run goes on.

    Args:
        id (str):
        body (AnswerBody): `POST /v1/questions/{id}/answer` body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | QuestionAnswer]
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
    body: AnswerBody,

) -> Problem | QuestionAnswer | None:
    """ Answer a question: the answer must fit its schema (422 with the schema's reasons otherwise) and
    enters the run as the person's words; the run goes on.

    Args:
        id (str):
        body (AnswerBody): `POST /v1/questions/{id}/answer` body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | QuestionAnswer
     """


    return (await asyncio_detailed(
        id=id,
client=client,
body=body,

    )).parsed
