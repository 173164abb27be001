"""Multipart uploads through presigned URLs: prepare, send each part to its URL, then
complete (which queues the ingestion) or abort. With the local object store the service
serves the part URLs itself (`PUT /upload/parts`), authenticated by their signature."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from datawell.api.routing import WRITABLE_DATASET, Context, Endpoint, Router
from datawell.api.schemas import ApiModel, WholeNumber
from datawell.api.urls import absolute
from datawell.client.models import AbortedUpload as AbortResponse
from datawell.client.models import CompletedUpload as CompleteResponse
from datawell.client.models import PartReceipt, PresignedPart
from datawell.client.models import PreparedUpload as PrepareResponse
from datawell.errors import InvalidInput, NotFound, SubError
from datawell.ingest.worker import queue_work
from datawell.services import PART_PATH, Services
from datawell.storage.datasets import DatasetRef
from datawell.storage.ingestions import enqueue
from datawell.storage.objects import LocalObjectStore, ObjectStore, StoredPart, normalize_etag, part_size_error
from datawell.storage.tables import Ingestion, Upload, User, utcnow
from datawell.storage.uploads import (
    MAX_FILENAME,
    MAX_PARTS,
    MAX_SIZE,
    PART_SIZE,
    UploadStatus,
    abort_upload,
    check_open,
    create_upload,
    find_upload,
    get_upload,
    move,
    object_key,
    part_sizes,
    start_completing,
)

log = logging.getLogger(__name__)
router = Router("uploads")

MULTIPART_PATH = "/upload/multipart/{username}/{namespace}/{datasetName}"
LISTED_PROBLEMS = 100  # sub_errors named one by one; the rest are counted


class PrepareRequest(ApiModel):
    filename: str = Field(min_length=1, max_length=MAX_FILENAME, description="Name of the file to upload.")
    size: WholeNumber = Field(
        ge=1,
        description=f"File size in bytes; at most {MAX_SIZE} ({MAX_PARTS} parts of {PART_SIZE}).",
        json_schema_extra={"maximum": MAX_SIZE},  # checked by prepare, which says why
    )


class AbortRequest(ApiModel):
    upload_id: str = Field(min_length=1)
    key: str = Field(min_length=1)


class CompletedPart(ApiModel):
    part_number: WholeNumber = Field(ge=1, le=MAX_PARTS)
    etag: str = Field(min_length=1, description="The ETag header the part's PUT answered with.")


class CompleteRequest(ApiModel):
    upload_id: str = Field(min_length=1)
    key: str = Field(min_length=1)
    parts: list[CompletedPart] | None = Field(
        None, description="Every part with its ETag, checked against what was stored; omit to use what was stored."
    )


class PartQuery(BaseModel):
    """The query of a part URL, exactly as prepare returned it (checked by signature, so
    nothing is validated here: a tampered URL is refused as forged)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    key: str = ""
    upload_id: str = ""
    part_number: str = ""
    size: str = ""
    expires: str = Field("", description="Unix time after which the URL is refused.")
    signature: str = Field("", description="HMAC-SHA256 over method, key, uploadId, partNumber, size and expiry.")


@router.post(MULTIPART_PATH + "/prepare", PrepareResponse, body=PrepareRequest, resolve=WRITABLE_DATASET)
async def prepare(
    request: Request, ctx: Context, user: User, body: PrepareRequest, dataset: DatasetRef
) -> PrepareResponse:
    """Prepare a multipart upload

    Opens a multipart upload into the dataset and returns one presigned URL per 8 MiB part.
    PUT each part's bytes to its URL, then call complete (or abort). Needs write access to the
    namespace; a file larger than 10000 parts is refused with 422."""
    services = ctx.services
    if body.size > MAX_SIZE:
        raise InvalidInput(
            f"the file is too large: the maximum size is {MAX_SIZE} bytes ({MAX_PARTS} parts of {PART_SIZE} bytes)",
            sub_errors=[SubError("too_large", f"size: {body.size} is more than the maximum of {MAX_SIZE} bytes")],
        )
    sizes = part_sizes(body.size)
    key = object_key(dataset, body.filename)
    expires_at = utcnow() + timedelta(seconds=services.settings.presign_ttl_seconds)
    # No transaction stays open while the object store answers (presigning 10000 S3 URLs takes seconds).
    upload_id = await services.objects.start_multipart(key)
    urls = await services.objects.part_urls(key, upload_id, sizes, expires_at.timestamp())
    async with services.db.session() as session:
        await create_upload(session, dataset, upload_id, key, body.filename, body.size, user, expires_at)
    return PrepareResponse(
        upload_id=upload_id,
        key=key,
        part_size=PART_SIZE,
        presigned_urls=[
            PresignedPart(url=absolute(request, services.settings, url), size=size)
            for url, size in zip(urls, sizes, strict=True)
        ],
        expires_at=expires_at,
    )


@router.post(MULTIPART_PATH + "/abort", AbortResponse, body=AbortRequest, errors=(409,), resolve=WRITABLE_DATASET)
async def abort(request: Request, ctx: Context, user: User, body: AbortRequest, dataset: DatasetRef) -> AbortResponse:
    """Abort a multipart upload

    Aborts an open upload and deletes every part stored so far. 409 if the upload is
    already completed or aborted."""
    services = ctx.services
    async with services.db.session() as session:
        upload = await get_upload(session, dataset, body.upload_id, body.key)
        check_open(upload)
    await abort_upload(services.db, services.objects, upload)
    return AbortResponse(upload_id=upload.id, key=upload.key, status=UploadStatus.ABORTED.value)


def completes(on: Router, path: str, response: type[BaseModel], body: type[ApiModel]) -> Callable[[Endpoint], Endpoint]:
    """A route completing a multipart upload of the dataset (`complete_upload`, which needs write
    access): 202 with the queued ingestion, 409 when the upload is not open. Also the DataLinks
    SDK's `/finish`."""
    return on.post(path, response, body=body, status=202, errors=(409,), resolve=WRITABLE_DATASET)


@completes(router, MULTIPART_PATH + "/complete", CompleteResponse, CompleteRequest)
async def complete(
    request: Request, ctx: Context, user: User, body: CompleteRequest, dataset: DatasetRef
) -> CompleteResponse:
    """Complete a multipart upload and start its ingestion

    Checks that every part is stored with its exact size (and, when `parts` is given, its
    ETag), assembles the object and queues an ingestion attempt for it. Answers 202 with the
    ingestion's id; follow it in the dataset's ingestion attempts. 422 names missing or
    wrong parts (the upload stays open, so they can be sent again); 409 if the upload is not
    open. An upload whose completion died half-way (no answer came) can be completed again
    once the completion lease has passed."""
    ingestion = await complete_upload(ctx.services, dataset, user, body.upload_id, body.key, body.parts)
    return CompleteResponse(id=ingestion.id, upload_id=body.upload_id, key=body.key, status=ingestion.status)


async def complete_upload(
    services: Services,
    dataset: DatasetRef,
    user: User,
    upload_id: str,
    key: str,
    claimed: list[CompletedPart] | None,
    name: str | None = None,
) -> Ingestion:
    """Assemble the upload's parts and queue its ingestion (named `name`, else the file's
    name): `complete`, and the DataLinks SDK's `finish`."""
    async with services.db.session() as session:
        upload = await get_upload(session, dataset, upload_id, key)
        retaken = await start_completing(session, upload)
    try:
        if retaken and await assembled(services.objects, upload):
            await services.objects.abort_multipart(upload.key, upload.id)  # leftover parts, if any
        else:
            stored = await services.objects.stored_parts(upload.key, upload.id)
            parts = checked_parts(upload, stored, claimed)
            await services.objects.complete_multipart(upload.key, upload.id, parts)
    except BaseException:
        async with services.db.session() as session:
            await move(session, upload, UploadStatus.COMPLETING, UploadStatus.OPEN)
        raise

    async def completed(session: AsyncSession) -> Ingestion:
        await move(session, upload, UploadStatus.COMPLETING, UploadStatus.COMPLETED)
        return await enqueue(session, dataset.record, upload.key, name or upload.filename, upload.size, user)

    return await queue_work(services, completed)


async def assembled(objects: ObjectStore, upload: Upload) -> bool:
    """Whether the upload's object is already whole: a completion died after assembling it."""
    try:
        return await objects.size(upload.key) == upload.size
    except NotFound:
        return False


def checked_parts(
    upload: Upload, stored: dict[int, StoredPart], claimed: list[CompletedPart] | None
) -> list[StoredPart]:
    """The stored parts 1..N in order, if each is there with its exact size and, when the
    client listed its parts, the ETag it was given; otherwise a 422 naming every problem."""
    sizes = part_sizes(upload.size, upload.part_size)
    problems: list[SubError] = []
    listed: dict[int, str] | None = None
    if claimed is not None:
        listed = {}
        for index, item in enumerate(claimed):
            if item.part_number > len(sizes):
                problems.append(
                    SubError(
                        "unknown_part", f"parts.{index}: part {item.part_number} is beyond the last part ({len(sizes)})"
                    )
                )
            elif item.part_number in listed:
                problems.append(SubError("duplicate_part", f"parts.{index}: part {item.part_number} is listed twice"))
            listed[item.part_number] = item.etag
    missing: list[int] = []
    parts: list[StoredPart] = []
    for number, expected in enumerate(sizes, start=1):
        part = stored.get(number)
        if part is None or (listed is not None and number not in listed):
            missing.append(number)
            continue
        if part.size != expected:
            problems.append(
                SubError("wrong_part_size", f"part {number}: stored {part.size} bytes, expected {expected} bytes")
            )
        if listed is not None and normalize_etag(listed[number]) != normalize_etag(part.etag):
            problems.append(
                SubError("etag_mismatch", f"part {number}: ETag {listed[number]} does not match the stored {part.etag}")
            )
        parts.append(part)
    if not missing and not problems:
        return parts
    subs = [SubError("missing_part", f"part {n}: not uploaded ({sizes[n - 1]} bytes expected)") for n in missing]
    subs += problems
    if len(subs) > LISTED_PROBLEMS:
        subs = [*subs[:LISTED_PROBLEMS], SubError("more_problems", f"and {len(subs) - LISTED_PROBLEMS} more")]
    if missing:
        message = f"the upload is incomplete: part(s) {number_ranges(missing)} of {len(sizes)} are missing"
    else:
        message = "some parts do not match what the upload expects"
    raise InvalidInput(message, sub_errors=subs)


def number_ranges(numbers: list[int]) -> str:
    """[1, 2, 3, 7] -> '1-3, 7'."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


@router.put(PART_PATH, PartReceipt, query=PartQuery, public=True, errors=(403, 404, 409))
async def put_part(request: Request, ctx: Context, query: PartQuery) -> Response:
    """Upload one part (local object store)

    The presigned part URLs of the local object store point here. The request body is the
    part's raw bytes, exactly the `size` prepare announced; no bearer token is needed, the
    URL's signature authenticates it. Answers with the part's ETag (header and body). A
    forged or expired URL is 403, a body of another size 422; neither stores anything."""
    services = ctx.services
    store = services.objects
    if not isinstance(store, LocalObjectStore):
        raise NotFound("part URLs are served by the object store, not by this service")
    key, upload_id, number, size = store.verify_part_url(dict(request.query_params))
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) != size:
        raise part_size_error(number, size, int(declared))
    async with services.db.session() as session:
        upload = await find_upload(session, upload_id)
        if upload is None or upload.key != key:
            raise NotFound(f"no upload {upload_id!r} with key {key!r}")
        check_open(upload)
    try:
        etag = await store.write_part(upload_id, number, size, request.stream())
    except ClientDisconnect:
        # Nobody is left to answer; write_part stored nothing. Not an error of the service.
        log.info("the client sending part %d of upload %s disconnected", number, upload_id)
        return Response(status_code=400)
    receipt = PartReceipt(part_number=number, size=size, etag=etag)
    return JSONResponse(receipt.model_dump(mode="json", by_alias=True), headers={"ETag": etag})
