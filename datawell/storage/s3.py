"""The `s3` object store: objects in one bucket of any S3-compatible store, through boto3.
Parts of a multipart upload go from the client straight to the store's presigned URLs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from datawell.errors import NotFound
from datawell.storage.objects import StoredPart


class S3ObjectStore:
    """Objects in one bucket of an S3-compatible store. boto3 is synchronous, so every call
    runs in a worker thread; the client itself is thread-safe."""

    def __init__(self, client: Any, bucket: str) -> None:
        self.client = client
        self.bucket = bucket

    @classmethod
    def connect(cls, bucket: str, *, endpoint_url: str | None, region: str) -> S3ObjectStore:
        import boto3
        from botocore.config import Config

        # Path-style addressing works with every S3-compatible store (MinIO, Ceph, moto),
        # where bucket subdomains often do not resolve; SigV4 is what presigned PUTs need.
        config = Config(signature_version="s3v4", s3={"addressing_style": "path" if endpoint_url else "auto"})
        client = boto3.session.Session().client("s3", endpoint_url=endpoint_url, region_name=region, config=config)
        return cls(client, bucket)

    async def _call(self, method: str, **params: Any) -> Any:
        return await asyncio.to_thread(getattr(self.client, method), Bucket=self.bucket, **params)

    async def put(self, key: str, data: bytes) -> None:
        await self._call("put_object", Key=key, Body=data)

    async def download(self, key: str, destination: Path) -> None:
        try:
            await self._call("download_file", Key=key, Filename=str(destination))
        except Exception as exc:
            raise_not_found(exc, f"no object {key!r}")
            raise

    async def size(self, key: str) -> int:
        try:
            head = await self._call("head_object", Key=key)
        except Exception as exc:
            raise_not_found(exc, f"no object {key!r}")
            raise
        return int(head["ContentLength"])

    async def delete(self, key: str) -> None:
        await self._call("delete_object", Key=key)

    async def start_multipart(self, key: str) -> str:
        created = await self._call("create_multipart_upload", Key=key)
        return str(created["UploadId"])

    async def part_urls(self, key: str, upload_id: str, sizes: Sequence[int], expires_at: float) -> list[str]:
        ttl = max(1, int(expires_at - time.time()))

        def presign() -> list[str]:
            # ContentLength is signed into each URL, so the store itself refuses a part
            # of another size.
            return [
                self.client.generate_presigned_url(
                    "upload_part",
                    Params={
                        "Bucket": self.bucket,
                        "Key": key,
                        "UploadId": upload_id,
                        "PartNumber": number,
                        "ContentLength": size,
                    },
                    ExpiresIn=ttl,
                    HttpMethod="PUT",
                )
                for number, size in enumerate(sizes, start=1)
            ]

        return await asyncio.to_thread(presign)

    async def stored_parts(self, key: str, upload_id: str) -> dict[int, StoredPart]:
        def list_all() -> dict[int, StoredPart]:
            parts: dict[int, StoredPart] = {}
            pages = self.client.get_paginator("list_parts").paginate(Bucket=self.bucket, Key=key, UploadId=upload_id)
            for page in pages:
                for part in page.get("Parts", []):
                    parts[part["PartNumber"]] = StoredPart(part["PartNumber"], part["Size"], part["ETag"])
            return parts

        try:
            return await asyncio.to_thread(list_all)
        except Exception as exc:
            raise_not_found(exc, f"the object store holds no upload {upload_id}")
            raise

    async def complete_multipart(self, key: str, upload_id: str, parts: Sequence[StoredPart]) -> None:
        await self._call(
            "complete_multipart_upload",
            Key=key,
            UploadId=upload_id,
            MultipartUpload={"Parts": [{"PartNumber": p.number, "ETag": p.etag} for p in parts]},
        )

    async def abort_multipart(self, key: str, upload_id: str) -> None:
        try:
            await self._call("abort_multipart_upload", Key=key, UploadId=upload_id)
        except Exception as exc:
            if error_code(exc) not in {"NoSuchUpload", "404"}:
                raise

    async def multipart_ids(self) -> list[str]:
        def list_all() -> list[str]:
            paginator = self.client.get_paginator("list_multipart_uploads")
            return [u["UploadId"] for page in paginator.paginate(Bucket=self.bucket) for u in page.get("Uploads", [])]

        return await asyncio.to_thread(list_all)


def error_code(exc: Exception) -> str | None:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    return str(response.get("Error", {}).get("Code"))


def raise_not_found(exc: Exception, message: str) -> None:
    """Turn the store's "no such thing" answers into NotFound; anything else stays as it is."""
    if error_code(exc) in {"404", "NoSuchKey", "NoSuchUpload", "NotFound"}:
        raise NotFound(message) from None
