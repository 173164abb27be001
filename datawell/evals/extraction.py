"""The target of `extract` suites: a file ingested into a fresh dataset through the real
ingestion path (format detection, the model's column mapping or record extraction, value
readings, type inference, staging and publishing), and the rows that came out, read back
through the QL as a user would."""

from __future__ import annotations

import asyncio
import time
import uuid

from langchain_core.callbacks import get_usage_metadata_callback

from datawell.errors import DatawellError
from datawell.evals.fixtures import FixtureStore
from datawell.evals.records import ErrorInfo, Prediction, token_usage
from datawell.evals.suites import Case, Suite
from datawell.ingest.worker import Worker
from datawell.services import Services
from datawell.storage import access, datasets
from datawell.storage.ingestions import enqueue
from datawell.storage.tables import Ingestion

NAMESPACE = "extract"


async def predict_extraction(
    suite: Suite, case: Case, services: Services, store: FixtureStore, timeout: float
) -> Prediction:
    """Ingest the case's file into a dataset of the case's schema; the published rows (without
    the internal `__` columns) and the attempt's status message, or why it failed."""
    assert suite.path is not None and case.vars.file is not None  # the suite's checks make sure
    path = suite.path.parent / case.vars.file
    prediction = Prediction(case_id=case.id, kind=suite.kind, question=case.vars.file, namespace=NAMESPACE)
    started = time.perf_counter()
    with get_usage_metadata_callback() as usage:
        try:
            async with asyncio.timeout(timeout):
                async with services.db.session() as session:
                    namespace = await access.ensure_namespace(session, store.user, NAMESPACE)
                    ref = await datasets.create_dataset(
                        session, namespace, case.id, case.vars.data_description, dict(case.vars.fields), store.user
                    )
                key = f"evals/{uuid.uuid4().hex}/{path.name}"
                await services.objects.put(key, path.read_bytes())
                async with services.db.session() as session:
                    ingestion_id = (
                        await enqueue(session, ref.record, key, path.name, path.stat().st_size, store.user)
                    ).id
                worker = Worker(services, "evals")
                while await worker.run_once() is not None:
                    pass
                async with services.db.session() as session:
                    attempt = await session.get_one(Ingestion, ingestion_id)
                prediction.answer = attempt.status_message
                if attempt.status != "SUCCEEDED":
                    prediction.error = ErrorInfo(code="INGESTION_FAILED", message=attempt.status_message)
                else:
                    result = await services.query_tools.run(store.user, namespace, f'SELECT * FROM "{case.id}"')
                    prediction.rows = [{k: v for k, v in row.items() if not k.startswith("__")} for row in result.rows]
        except DatawellError as exc:
            prediction.error = ErrorInfo(code=exc.error_code, message=exc.message)
        except TimeoutError:
            prediction.error = ErrorInfo(code="TIMEOUT", message=f"no result within {timeout:g} s")
    prediction.latency_ms = (time.perf_counter() - started) * 1000
    prediction.tokens = token_usage(dict(usage.usage_metadata))
    return prediction
