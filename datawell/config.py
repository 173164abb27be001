"""Settings, read once from the environment (``DATAWELL_*``) and nowhere else."""

from __future__ import annotations

import dataclasses
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    D = TypeVar("D", bound=DataclassInstance)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DATAWELL_", env_file=".env", extra="ignore")

    data_dir: Path = Field(
        Path("./.datawell"), description="Folder for the SQLite database, objects, vectors, model cache."
    )
    database_url: str | None = Field(None, description="SQLAlchemy async URL; default SQLite in data_dir.")
    rows_database_url: str | None = Field(
        None,
        description="Database for dataset rows; default: rows.db in data_dir beside a SQLite metadata database, "
        "else database_url.",
    )
    public_base_url: str | None = Field(
        None,
        description="Address clients use to reach the service, for the absolute URLs it hands out; "
        "unset: the address each request was sent to.",
    )
    host: str = "127.0.0.1"
    port: int = 8000

    # The client commands (`datawell upload`, `ask`, …): the server they talk to (default:
    # where `datawell serve` listens on this machine) and the bearer token they send.
    server: str | None = None
    token: SecretStr | None = None

    # Auth: tokens are HS256 JWTs signed with this key. The default is generated once
    # into data_dir so a fresh machine works; set it explicitly for several processes.
    jwt_secret: SecretStr | None = None
    token_ttl_seconds: int = 30 * 24 * 3600
    oidc_issuer: str | None = None
    oidc_jwks_url: str | None = None
    oidc_audience: str | None = None
    auth_url: str = "https://auth.example.invalid/authorize"

    # Objects
    object_store: str = Field("local", pattern="^(local|s3)$")
    s3_endpoint_url: str | None = None
    s3_bucket: str = "datawell"
    s3_region: str = "us-east-1"
    presign_ttl_seconds: int = 3600

    # Vectors
    qdrant_url: str | None = Field(
        None,
        description="A Qdrant server for the vectors; unset: the embedded on-disk index in DATA_DIR/vectors, "
        "or pgvector (see VECTOR_STORE).",
    )
    vector_store: Literal["auto", "embedded", "pgvector", "qdrant"] = Field(
        "auto",
        description="Where the vectors are: auto = the Qdrant server of QDRANT_URL if set, else the rows' "
        "PostgreSQL database when its server has pgvector (DATA_DIR/vectors is moved into it), else the "
        "embedded index in DATA_DIR/vectors; pgvector refuses to start without the extension.",
    )
    # pgvector: the least maintenance_work_mem (MB) a new dataset's HNSW index is built with (storage/pgvector.py).
    pgvector_build_memory_mb: int = Field(4096, ge=64)

    # Models: a litellm name ("provider/model"); empty means the embedded model.
    model: str | None = None
    plan_model: str | None = None
    query_model: str | None = None
    answer_model: str | None = None
    llm_timeout_seconds: float = 120.0
    llm_max_retries: int = 2
    embedded_model_enabled: bool = True
    embedded_model_threads: int = Field(
        0, ge=0, description="CPU threads for the embedded model; 0 = every core this process may use."
    )
    embedded_model_preload: bool = Field(
        True, description="Load the embedded model in the background when the service starts, when a stage uses it."
    )
    embedded_model_parallel: int = Field(
        4, ge=1, le=16, description="Sequences the embedded model decodes at once (llama.cpp's n_parallel)."
    )
    embedded_model_batch: int = Field(
        0,
        ge=0,
        description="Prompt tokens the embedded model evaluates per batch (llama.cpp's n_batch); 0 = its default.",
    )
    embedded_model_unified_kv: bool = Field(
        True,
        description="One KV cache for every sequence (llama.cpp's kv_unified); off: one per sequence, "
        "each of DATAWELL_EMBEDDED_MODEL_CONTEXT tokens.",
    )
    embedded_model_context: int = Field(
        4096, ge=512, le=32768, description="Context tokens per parallel sequence of the embedded model."
    )
    embedded_model_share_prompts: bool = Field(
        False,
        description="After each call a one-token request makes the embedded model save the call's prompt to its "
        "host-RAM cache, so that a namespace's prefix, once read, is copied to any sequence instead of read again; "
        "the scheduler then runs one namespace's questions at once (docs/decisions.md, issue 52). Measured slower: "
        "four askers of one namespace at once took 3.6-3.9x as long as in turn with it, 0.92-0.98x without.",
    )

    # The model scheduler (docs/operations.md): every model call of the process waits here.
    model_slots: int = Field(
        0,
        ge=0,
        description="Runs calling a model at once; 0 = the embedded model's parallel sequences. Set it for hosted models.",
    )
    model_queue: int = Field(
        16, ge=0, description="Questions waiting for a slot at most; past it a question gets 503 with Retry-After."
    )
    model_runs_per_user: int = Field(2, ge=1, description="Runs of one user holding a slot at once.")
    # The embedded model's rates on this machine, measured (docs/decisions.md, issue 52): the scheduler weighs
    # waiting for the slot holding a namespace's prompt prefix against reading it again, and runs no more
    # sequences at once than the decode rates pay for.
    model_prefill_tokens_per_second: float = Field(
        53.0,
        gt=0,
        description="Prompt tokens the embedded model reads a second (NOTES-LLM: about 53 on the idle 2-core "
        "machine); the model's own timings replace it once it has read a prompt.",
    )
    model_decode_tokens_per_second: dict[int, float] = Field(
        default_factory=lambda: {1: 12.0, 2: 15.11, 4: 18.05},
        description="Output tokens a second of all sequences together, by sequences decoding at once (JSON, e.g. "
        '{"1": 12.0, "2": 15.11, "4": 18.05}: bench/decode_batch.py --context 1100 on the idle 2-core machine). '
        "A further sequence runs at once only if it raises this rate.",
    )
    model_prefix_tokens: int = Field(
        1100, ge=1, description="A namespace's prompt prefix in tokens until one of its runs was observed."
    )
    embeddings_enabled: bool = True
    embeddings_model: Literal["minilm-static", "minilm"] = Field(
        "minilm-static",
        description="Text embeddings of rows, fields and semantic() questions: minilm-static (a static model "
        "distilled from all-MiniLM-L6-v2 on first use, cached in the data folder; thousands of rows a second) or "
        "minilm (the transformer itself; about 200 rows a second on 2 cores). Changing it leaves earlier vectors "
        "unused: re-ingest to embed them again.",
    )

    # Query language limits
    query_row_cap: int = 1000
    query_time_limit_seconds: float = 10.0
    query_max_row_bytes: int = Field(1 << 20, ge=1024, description="Largest result row (and SQLite string).")
    query_max_result_bytes: int = Field(16 << 20, ge=1024, description="Results are cut past this many bytes.")
    query_work_mem_mb: int = Field(16, ge=1, description="PostgreSQL work_mem of a query's transaction.")
    query_temp_file_mb: int = Field(
        1024,
        ge=1,
        description="PostgreSQL temp_file_limit of a query's transaction (set when the service's role is "
        "a superuser; else an administrator sets it, see docs/query-language.md).",
    )
    query_concurrency: int = Field(
        4,
        ge=1,
        description="Queries running at once on the rows database; a caller running one waits while others wait.",
    )
    query_max_chars: int = Field(
        50_000, ge=1_000, le=1_000_000, description="Longest query text, checked before it is parsed."
    )
    query_max_ctes: int = Field(32, ge=1, le=500, description="CTEs (WITH name AS (...)) in one query.")
    query_max_selects: int = Field(
        64, ge=1, le=1_000, description="SELECTs in one query: it, its subqueries, CTE bodies and UNION arms."
    )
    query_max_joins: int = Field(32, ge=1, le=500, description="JOINs in one query.")
    query_max_expanded: int = Field(
        256,
        ge=8,
        le=10_000,
        description="Query blocks once every CTE is copied into each place that reads it (SQLite plans it so).",
    )
    query_max_nesting: int = Field(
        100, ge=8, le=200, description="Deepest nesting of parentheses, subqueries, CASE and NOT in a query."
    )
    query_max_built_chars: int = Field(
        10_000, ge=1, description="Longest string lpad()/rpad() may build in a query (a larger literal is refused)."
    )
    query_max_semantic: int = Field(10, ge=1, description="semantic() calls one query may make.")
    query_max_attempts: int = Field(3, ge=1, description="Tries to write a valid query (the first plus repairs).")
    query_name_columns: bool = Field(False, description="The query writer first lists the columns its query uses.")
    # issue 50: the embedded model cannot name a table or column the catalog lacks (a hosted model is never held)
    query_grammar: bool = Field(False, description="The embedded model writes its query under the catalog's grammar.")
    query_grammar_repairs: bool = Field(False, description="...only its repairs: the first query is written free.")
    # issue 27 (docs/decisions.md): literal matching, refusal by coverage, k query candidates; issue 47:
    # the rewrite rules by name (docs/query-rewrites.md), of which the three switches below are groups
    query_rules_disabled: str = Field(
        "",
        description="Query rewrite rules switched off, by name, comma-separated ('all': every rule; "
        "docs/query-rewrites.md lists them). An unknown name stops the service at start-up.",
    )
    query_rules_enabled: str = Field(
        "",
        description="Query rewrite rules that are off by default switched on, by name, comma-separated ('all': "
        "every one; docs/query-rewrites.md says which are off and why). A rule also disabled stays off.",
    )
    query_match_literals: bool = Field(
        True,
        description="The rules match_stored_values and filter_where_stored: text literals that are not stored "
        "values are matched to the column's values, or read on the column that stores them, before a query runs.",
    )
    query_fit_shape: bool = Field(
        True,
        description="Every before-run rule but the two of query_match_literals (drop_unasked_limit, "
        "divide_as_fractions, select_group_keys, ... : docs/query-rewrites.md).",
    )
    query_mend: bool = Field(
        True,
        description="Every on-refusal rule (drop_phantom_joins, near_column_names, swap_tables, ... : "
        "docs/query-rewrites.md): a refused query whose slip has one sensible reading is mended and run "
        "without asking the model again.",
    )
    query_refuse_unheld_subject: bool = Field(
        True,
        description="Refuse, before writing a query, a question whose subject (what it asks for: 'the email "
        "address of each author') is no word the catalog holds (datawell/tools/coverage.py).",
    )
    query_refuse_uncovered: bool = Field(
        False,
        description="Refuse, before writing a query, a question whose words the catalog's fields do not cover "
        "(off: on the bundled suites it refuses answerable questions; see docs/decisions.md).",
    )
    query_candidates: int = Field(
        1,
        ge=1,
        le=8,
        description="Query candidates written at once for a question; each runs and the result most of them "
        "agree on is the answer (1: no voting; measure the dev suite at 1, 3, 5 before raising it).",
    )
    query_candidate_temperature: float = Field(
        0.7, ge=0, le=2, description="The sampling temperature of query candidates after the first."
    )
    query_few_shot: int = Field(
        3, ge=0, description="Verified examples most like the question shown to the query writer (0: none)."
    )
    query_few_shot_checks: int = Field(
        12, ge=1, description="Most similar verified examples checked for the few-shot list (unrunnable ones skipped)."
    )
    # Public question -> query pairs on other databases, the most like the question (issue 50, docs/evals.md).
    retrieved_examples: int = Field(0, ge=0, le=8, description="Examples from other databases shown (0: none).")
    # Evals set it: a fixture namespace is named after its database, whose own pairs it never sees.
    retrieved_examples_leave_own_out: bool = False
    schema_prune_tables: int = Field(
        6, ge=1, description="A namespace with more tables than this shows the query writer only the relevant ones."
    )
    schema_prune_columns: int = Field(60, ge=1, description="...or with more columns than this, in all its tables.")
    schema_prune_keep: int = Field(6, ge=1, description="At most this many tables in a pruned catalog.")
    # issue 50: the tables schema linking picks join a pruned catalog; also its join path read from key names
    schema_linking: bool = Field(False, description="Schema linking widens a pruned catalog (docs/evals.md).")
    schema_linking_joins: bool = Field(False, description="...and writes its join path's links read from key names.")

    # Requests
    max_request_bytes: int = Field(
        8 * 1024 * 1024,
        ge=1024,
        description="Largest request body (the local store's part uploads aside); past it, 422.",
    )
    max_question_chars: int = Field(
        8000, ge=100, description="Longest question (ask, autorag, build-specs, A2A/MCP messages); past it, 422."
    )

    # Assistant budgets
    max_rows_per_step: int = Field(
        10, ge=1, description="Rows of a step the answer model reads; the rest are summarised."
    )
    max_tokens_per_run: int = 20000

    web_search_url: str | None = Field(None, description="SearXNG-style JSON search endpoint; unset: no web search.")
    web_search_timeout_seconds: float = 10.0
    web_search_results: int = 5

    # Ingestion
    run_worker_in_process: bool = True
    worker_poll_seconds: float = 1.0
    worker_lease_seconds: int = 300
    upload_sweep_seconds: float = Field(
        600.0, gt=0, description="How often a worker aborts open uploads abandoned a day past their expiry."
    )
    ingest_batch_rows: int = Field(50_000, ge=1, description="Rows read, coerced and written per batch.")
    ingest_embed_rows: bool = Field(True, description="Embed ingested rows' text into the vector store.")
    ingest_embed_batch_rows: int = Field(
        512, ge=1, description="Rows embedded per batch after publication (each batch is a resumable step)."
    )
    ingest_embed_text_chars: int = Field(
        256, ge=16, description="Characters of a row's text fields that its embedding is made from."
    )
    ingest_bulk_process_bytes: int = Field(
        16 * 1024 * 1024, ge=0, description="Delimited files this large are written to SQLite by a child process."
    )
    ingest_max_header_chars: int = Field(
        1024 * 1024, ge=1, description="Longest header line of a delimited file, in characters."
    )
    ingest_max_field_chars: int = Field(16 * 1024 * 1024, ge=1, description="Longest field of a delimited file.")
    ingest_max_columns: int = Field(10_000, ge=1, description="Most columns a tabular file may have.")
    worker_concurrency: int = Field(
        2, ge=1, description="Attempts one worker runs at once, so a slow file never holds up the others."
    )
    ingest_attempt_seconds: float = Field(
        3 * 3600.0, gt=0, description="Time budget of one ingestion attempt; past it the attempt fails."
    )
    work_sweep_seconds: float = Field(
        3600.0, gt=0, description="How often a worker removes work folders of attempts no worker runs any more."
    )

    # Ingestion limits: a file past one of them fails with a message naming the limit.
    ingest_max_unpacked_bytes: int = Field(
        1024**3, ge=1, description="XLSX: the most bytes its ZIP members may declare when unpacked, together."
    )
    ingest_max_unpack_ratio: float = Field(
        100.0, gt=1, description="XLSX: the most a ZIP member may grow when unpacked (unpacked / packed size)."
    )
    ingest_max_json_depth: int = Field(64, ge=1, le=500, description="JSON: the deepest nesting of one record.")
    ingest_max_pdf_pages: int = Field(2000, ge=1, description="PDF: the most pages read from one file.")
    ingest_max_document_chars: int = Field(
        2_000_000, ge=1, description="Text, Markdown, PDF: the most characters of text sent to the model, in passages."
    )
    ingest_max_prompt_chars: int = Field(
        20_000, ge=1000, description="The most characters of a file (column names, sample values) in one model prompt."
    )

    # MCP
    mcp_allowed_origins: list[str] = Field(
        default_factory=list,
        description="Browser origins, besides the service's own, that may call /api/v1/mcp (JSON list, e.g. "
        '["https://studio.example.com"]); a request with any other Origin gets 403 (DNS rebinding).',
    )

    # Web console
    console_models: list[str] = Field(
        default_factory=list,
        description='Hosted models the console offers on its ask page (JSON list, e.g. ["openai/gpt-4o-mini"]).',
    )
    evals_dir: Path = Field(Path("eval-results"), description="Folder of eval runs the console shows.")

    # Observability (docs/operations.md)
    metrics: Literal["open", "token", "off"] = Field(
        "open",
        description="GET /metrics: open to anyone who reaches the port, only with DATAWELL_METRICS_TOKEN as "
        "bearer token, or off (404).",
    )
    metrics_token: SecretStr | None = Field(None, description="The bearer token /metrics asks for when metrics=token.")
    log_format: Literal["text", "json"] = Field("text", description="Log lines as text, or one JSON object a line.")
    run_retention_days: float = Field(
        30.0, ge=0, description="Run records (the run viewer) older than this are deleted; 0 keeps none."
    )
    # OpenTelemetry's own variables (not DATAWELL_*): traces are off unless an exporter is named
    # (OTEL_TRACES_EXPORTER=otlp|console) or an OTLP endpoint is set.
    otel_sdk_disabled: bool = Field(False, validation_alias=AliasChoices("OTEL_SDK_DISABLED"))
    otel_traces_exporter: str | None = Field(None, validation_alias=AliasChoices("OTEL_TRACES_EXPORTER"))
    otel_service_name: str = Field("datawell", validation_alias=AliasChoices("OTEL_SERVICE_NAME"))
    otel_resource_attributes: str = Field("", validation_alias=AliasChoices("OTEL_RESOURCE_ATTRIBUTES"))
    otel_exporter_otlp_endpoint: str | None = Field(None, validation_alias=AliasChoices("OTEL_EXPORTER_OTLP_ENDPOINT"))
    otel_exporter_otlp_traces_endpoint: str | None = Field(
        None, validation_alias=AliasChoices("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )
    otel_exporter_otlp_headers: str = Field(
        "", validation_alias=AliasChoices("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
    )
    otel_exporter_otlp_timeout_ms: float = Field(
        10_000, validation_alias=AliasChoices("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
    )
    otel_traces_sampler_arg: float = Field(1.0, ge=0, le=1, validation_alias=AliasChoices("OTEL_TRACES_SAMPLER_ARG"))

    @property
    def server_url(self) -> str:
        if self.server:
            return self.server
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    def group(self, cls: type[D], prefix: str) -> D:
        """The dataclass `cls` with each field `x` from the setting `<prefix>x`
        (`settings.group(FileLimits, "ingest_max_")`)."""
        return cls(**{f.name: getattr(self, prefix + f.name) for f in dataclasses.fields(cls)})

    @property
    def resolved_model_slots(self) -> int:
        return self.model_slots or self.embedded_model_parallel

    @cached_property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite+aiosqlite:///{(self.data_dir / 'datawell.db').resolve()}"

    @cached_property
    def resolved_rows_database_url(self) -> str:
        if self.rows_database_url:
            return self.rows_database_url
        if self.resolved_database_url.startswith("sqlite"):  # never the metadata file: see docs/query-language.md
            return f"sqlite+aiosqlite:///{(self.data_dir / 'rows.db').resolve()}"
        return self.resolved_database_url
