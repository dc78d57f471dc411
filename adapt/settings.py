"""Settings, read from environment variables (prefix ``ADAPT_``) and an optional ``.env``.

Read only at the edges (CLI, api/, workers/); the library takes plain arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from adapt.engine.budget import Budget
from adapt.llm.pricing import ModelPrice

SIM_DEFAULT_MODEL = "sim:textcraft?capability=1"
OPENAI_DEFAULT_MODEL = "openai:gpt-4o-mini"
#: the fewest HTTP connections a process's model clients may open (as many as a pool built
#: outside the service opens: ``adapt.llm.openai_compat.pool.MAX_CONNECTIONS``)
MODEL_CONNECTIONS = 256


def _default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "adapt"


class LLMEndpointSetting(BaseModel):
    """One model endpoint users may name in ``openai:<model>@<base_url>`` specs."""

    base_url: str = Field(description="http(s) base URL, e.g. http://10.0.0.5:8000/v1.")
    api_key: SecretStr | None = Field(default=None,
                                      description="Sent to this endpoint only.")
    name: str | None = Field(default=None, description="How errors name the endpoint "
                             "(default: its URL).")
    server_kind: Literal["openai", "vllm", "llama.cpp"] | None = Field(
        default=None, description="What the server is, so grammars and JSON schemas reach it "
        "in the fields it reads: 'vllm' (structured_outputs), 'llama.cpp' (grammar, "
        "json_schema) or 'openai' (response_format; no grammars). Unset: neither is sent.")
    guided_decoding: Literal["llama.cpp", "vllm"] | None = Field(
        default=None, description="The older name of server_kind (llama.cpp or vllm).")

    @model_validator(mode="after")
    def _one_kind(self) -> LLMEndpointSetting:
        self.server_kind = one_server_kind(self.server_kind, self.guided_decoding)
        return self


def one_server_kind(server_kind: str | None, guided_decoding: str | None) -> Any:
    """``server_kind``, else its older name ``guided_decoding``; both set must agree."""
    if server_kind and guided_decoding and server_kind != guided_decoding:
        raise ValueError(f"server_kind {server_kind!r} and guided_decoding {guided_decoding!r} "
                         "disagree; set server_kind alone")
    return server_kind or guided_decoding


class RemoteEnvironmentSetting(BaseModel):
    """One environment served by another process, under the name it is registered as."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="The server's http(s) URL, e.g. http://10.0.0.7:8100 (the "
                     "protocol's paths are under it).")
    protocol: Literal["adapt", "agentgym"] = Field(
        default="adapt", description="'adapt' (`adapt env serve` or any server of adapt's "
        "environment protocol) or 'agentgym' (an AgentGym environment server).")
    token: SecretStr | None = Field(default=None, description="Sent as a bearer token to "
                                    "this server only.")
    family: str | None = Field(default=None, description="protocol 'agentgym': which kind of "
                               "AgentGym server it is (default: the name; known: textcraft).")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ADAPT_", env_file=".env", extra="ignore")

    openai_api_key: str | None = Field(
        default=None,
        validation_alias=AliasChoices("ADAPT_OPENAI_API_KEY", "OPENAI_API_KEY"),
        description="API key for openai: model specs (also read from OPENAI_API_KEY).",
    )
    openai_base_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("ADAPT_OPENAI_BASE_URL", "OPENAI_BASE_URL"),
        description="Default base URL for openai: model specs without '@<base_url>'.",
    )
    default_model: str | None = Field(
        default=None,
        description="Model spec used when a task names none. Unset: openai:gpt-4o-mini when an "
        "OpenAI key is configured, else the simulated TextCraft model.",
    )
    allow_remote_llm: bool = Field(
        default=False,
        description="Allow requests to non-loopback LLM endpoints (e.g. api.openai.com). "
        "Loopback endpoints are always allowed.",
    )
    llm_endpoints: list[LLMEndpointSetting] = Field(
        default_factory=list,
        description='Model endpoints users may name (JSON): [{"base_url": "http://10.0.0.5:'
        '8000/v1", "api_key": "...", "name": "vllm"}] or ["http://10.0.0.5:8000/v1"]. Each '
        "key is sent only to its own endpoint. The OpenAI endpoint (ADAPT_OPENAI_BASE_URL, "
        "default https://api.openai.com/v1, with ADAPT_OPENAI_API_KEY) is allowed too once "
        "either is set. Nothing else, loopback included, may be named through the API.",
    )
    models_dir: Path | None = Field(
        default=None, description="Folder of .gguf files that local: model specs may name "
        "through the API (bundled models such as local:smollm2 are always allowed).",
    )
    path_roots: list[Path] = Field(
        default_factory=list, description="Folders that environment config fields naming a "
        "server path (e.g. ALFWorld game_path, data_dir) may point into, through the API "
        '(JSON list). Empty: no such path may be named.',
    )
    openai_server_kind: Literal["openai", "vllm", "llama.cpp"] | None = Field(
        default=None,
        description="What the OpenAI endpoint (ADAPT_OPENAI_BASE_URL) is, so grammars and "
        "JSON schemas reach it in the fields it reads: 'vllm' (structured_outputs), "
        "'llama.cpp' (grammar, json_schema) or 'openai' (response_format; no grammars). "
        "Unset: 'openai' for the OpenAI API; for another base URL neither is sent (the "
        "decoding monitor corrects output; the planner reads a text plan).",
    )
    guided_decoding: Literal["llama.cpp", "vllm"] | None = Field(
        default=None,
        description="The older name of ADAPT_OPENAI_SERVER_KIND (llama.cpp or vllm).",
    )
    llm_timeout: float = Field(default=60.0, gt=0, description="Seconds per LLM request.")
    llm_max_retries: int = Field(default=3, ge=0, description="Retries of one LLM call on "
                                 "429/5xx/timeouts (honouring Retry-After, else backoff).")
    llm_retry_budget: int = Field(
        default=20, ge=0, description="Retries all LLM calls of one task run may spend; past it "
        "the task stops in a state POST /tasks/{id}/resume resumes.")
    llm_max_connections: int | None = Field(
        default=None, ge=1, description="HTTP connections one process keeps open to model "
        "endpoints at most, in all; an LLM call beyond them waits for one. Unset: the "
        "process's concurrency (every task it runs may have a call in flight), at least 256.")
    llm_retry_max_wait: float = Field(
        default=60.0, gt=0, description="Longest Retry-After (seconds) a task waits out; a "
        "longer one stops the task (resumable).")
    pricing: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="Price overrides and additions, dollars per million tokens (JSON): "
        '{"model": {"prompt": 0.1, "completion": 0.4, "cached_prompt": 0.05}} or {"model": '
        "[prompt, completion]}. Other models: genai-prices' OpenAI prices (the package's "
        "snapshot), else cost unknown.",
    )
    data_dir: Path = Field(default_factory=_default_data_dir,
                           description="Where the embedded SQLite database lives.")
    database_url_: str | None = Field(
        default=None, validation_alias=AliasChoices("ADAPT_DATABASE_URL"),
        description="Database URL. Unset: SQLite at <data_dir>/adapt.db (embedded). "
        "PostgreSQL: postgresql://user@host:5432/db.",
    )

    broker_url: str | None = Field(
        default=None,
        description="Celery broker (redis://127.0.0.1:6379/0). Unset: tasks run in-process in "
        "the API server (embedded mode).",
    )
    celery_queue: str = Field(default="adapt", min_length=1,
                              description="The Celery queue tasks are published to.")
    db_pool_size: int = Field(default=10, ge=1, description="Database connections kept per "
                              "process (PostgreSQL); up to as many again on bursts. Tasks' "
                              "event writes use all but two of them at most (more wait).")
    store_prompts: bool = Field(
        default=True, description="Store LLM prompts with each call (completions are always "
        "stored).",
    )
    lease_seconds: float = Field(
        default=30.0, gt=0, description="A running task's lease; another worker may take the "
        "task over when it expires.",
    )
    heartbeat_seconds: float = Field(default=10.0, gt=0, description="Lease renewal and "
                                     "worker liveness interval.")
    drain_seconds: float = Field(
        default=10.0, ge=0, description="On shutdown (SIGTERM), how long LLM calls in flight may "
        "take to be answered and recorded before the tasks are handed back.")
    sweep_seconds: float = Field(
        default=15.0, gt=0, description="How often expired leases and stuck queued tasks are "
        "re-dispatched.",
    )
    retention_days: float | None = Field(
        default=None, gt=0, description="Delete finished tasks this many days after they "
        "finished (with their nodes, steps, calls, events and deliveries), in small batches, "
        "from every worker process. Unset: tasks are kept until deleted (`DELETE /tasks/{id}`, "
        "`adapt tasks purge`).")
    concurrency: int = Field(
        default=200, ge=1, description="Tasks one worker process (or the embedded server) runs "
        "at once.",
    )
    # the engine's Budget: its fields are the budget figures, defined once
    default_budget: Budget = Field(
        default_factory=lambda: Budget(max_llm_calls=200, max_tokens=2_000_000,
                                       max_nodes=200, deadline_seconds=1800,
                                       max_prompt_chars=100_000),
        description="Budget of a task for every figure its request leaves unset (JSON).",
    )
    max_budget: Budget = Field(
        default_factory=lambda: Budget(max_llm_calls=1000, max_tokens=10_000_000,
                                       max_nodes=1000, deadline_seconds=4 * 3600,
                                       max_prompt_chars=400_000),
        description="Largest budget figure a request may ask for (JSON); larger is a 422.",
    )
    max_config_bytes: int = Field(default=65_536, ge=256,
                                  description="Largest environment_config (as JSON) accepted.")
    tenant_max_active_tasks: int = Field(
        default=50, ge=1, description="Queued plus running tasks one tenant may have; more "
        "submissions get 429 with Retry-After.")
    tenant_submissions_per_minute: int = Field(
        default=120, ge=1, description="Tasks one tenant may submit per minute; more get 429 "
        "with Retry-After.")
    max_body_bytes: int = Field(default=1_048_576, ge=1024,
                                description="Largest request body the API accepts.")
    host: str = Field(default="127.0.0.1", description="`adapt serve` bind address.")
    published_host: str | None = Field(
        default=None, description="`adapt serve` in a container: the host address its port "
        "is published on (`docker run -p ADDRESS:8000:8000`). The rules for an API without "
        "keys judge this address instead of the bind address (0.0.0.0 in a container), and "
        "it is a Host the API answers. Unset: the bind address.")
    port: int = Field(default=8000, ge=1, le=65535, description="`adapt serve` port.")
    auth_mode: Literal["auto", "keys", "off"] = Field(
        default="auto", description="API authentication. auto: open until the first API key "
        "is created, then a key is required for good (revoking every key does not reopen "
        "it); keys: a key is always required; off: open to anyone, as tenant default "
        "(`adapt serve` refuses it on a non-loopback address).",
    )
    metrics_token: SecretStr | None = Field(
        default=None, description="Bearer token that /metrics requires (it aggregates all "
        "tenants). Unset: /metrics answers only while the API runs open.",
    )
    allow_public_without_keys: bool = Field(
        default=False, description="Let `adapt serve` bind a non-loopback address with no API "
        "keys configured (anyone can then use it).",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list, description="Host names (JSON list, e.g. "
        '["adapt.example.com"]) the API answers besides localhost, loopback addresses, the '
        "bind and published addresses and the address a connection arrived at; a request "
        "naming another Host is refused (421), which stops DNS rebinding. A cross-site "
        "POST/PUT/PATCH/DELETE is refused unless its Origin is the request's own Host or one "
        'of these names. ["*"]: any Host (the proxy in front checks it).')
    http_header_timeout_seconds: float = Field(
        default=5.0, gt=0, description="`adapt serve`: seconds a connection has to send a "
        "request's complete headers, counted from its start or from the first byte of a "
        "following request; then it is closed (slow clients cannot hold connections).")
    http_body_timeout_seconds: float = Field(
        default=30.0, gt=0, description="Seconds a client has to send a request's whole "
        "body; then the request is answered 408 and the connection closed.")
    http_keepalive_seconds: int = Field(
        default=5, ge=1, description="`adapt serve`: seconds an idle connection is kept "
        "open after a response (behind a proxy, make it longer than the proxy's idle "
        "timeout).")
    tenant_max_event_streams: int = Field(
        default=20, ge=1, description="Event streams (SSE) one tenant may hold open at once "
        "per API process; one more gets 429 with Retry-After. A closed stream frees its slot.")

    webhook_allowed_networks: list[str] = Field(
        default_factory=list, description="Networks (CIDRs, JSON list, e.g. "
        '["10.0.0.0/8", "127.0.0.1/32"]) or host names webhooks may be sent to although they '
        "are not public addresses. Empty: webhooks go to public addresses only.")
    webhook_retry_seconds: float = Field(
        default=86_400.0, gt=0, description="How long after an event its webhook delivery is "
        "retried (exponential backoff) before it is marked failed.")
    webhook_backoff_seconds: float = Field(
        default=5.0, gt=0, description="Wait before a webhook's first retry; doubles with each "
        "retry, at most an hour.")
    webhook_timeout_seconds: float = Field(
        default=10.0, gt=0, description="Deadline of one webhook attempt, everything included "
        "(resolving the name, connecting, sending, the answer's status and headers); the "
        "receiver's answer is cut there however it trickles.")
    webhook_concurrency: int = Field(
        default=20, ge=1, description="Webhook requests one worker process has in flight at "
        "most.")
    webhook_tenant_concurrency: int = Field(
        default=5, ge=1, description="Webhook requests one worker process has in flight for "
        "one tenant at most, so that one tenant's slow receivers leave slots to the others; "
        "tenants take turns for the free slots.")
    webhook_max_endpoints_per_tenant: int = Field(
        default=20, ge=1, description="Webhook endpoints (POST /webhooks) one tenant may "
        "have; one more is a 409 until one is deleted.")
    webhook_max_deliveries_per_task: int = Field(
        default=1000, ge=1, description="node.finished deliveries one task records at most (all "
        "endpoints together); the first event past it is logged as failed with the reason, "
        "later ones are not recorded; task.finished is always sent.")
    webhook_poll_seconds: float = Field(
        default=2.0, gt=0, description="How often a worker looks for webhook deliveries that "
        "are due (events of its own tasks wake it at once).")

    remote_environments: dict[str, RemoteEnvironmentSetting] = Field(
        default_factory=dict, description="Environments served by other processes (JSON "
        'object): {"textcraft": {"url": "http://10.0.0.7:8100"}, "tc-gym": {"url": '
        '"http://10.0.0.8:36001", "protocol": "agentgym", "family": "textcraft"}}. A task '
        "names one as its environment; a name here hides a built-in of the same name. Users "
        "never name URLs.")
    remote_environment_allowed_networks: list[str] = Field(
        default_factory=list, description="Networks (CIDRs, JSON list, e.g. "
        '["10.0.0.0/8", "127.0.0.1/32"]) or host names remote environment servers may be at '
        "although they are not public addresses; checked at start-up and before every "
        "request. Empty: public addresses only.")
    remote_environment_timeout_seconds: float = Field(
        default=30.0, gt=0, description="Deadline of one request to a remote environment's "
        "server, its answer included.")
    remote_environment_retry_seconds: float = Field(
        default=30.0, ge=0, description="How long a request to a remote environment's server "
        "is retried (connection errors, 5xx) before the task stops with an error that "
        "POST /tasks/{id}/resume resumes.")
    env_serve_token: SecretStr | None = Field(
        default=None, description="`adapt env serve`: the bearer token clients must send "
        "(the registration's token). Unset: none, and only a loopback address may be bound.")
    env_serve_idle_seconds: float = Field(
        default=600.0, gt=0, description="`adapt env serve`: seconds a session may go without "
        "a request before it is closed (its client then starts it again by replay).")
    env_serve_max_sessions: int = Field(
        default=100, ge=1, description="`adapt env serve`: sessions held at once; one more "
        "is refused (503) until one ends.")

    otel_capture_content: bool = Field(
        default=False, description="Trace export (OTEL_EXPORTER_OTLP_ENDPOINT set, extra "
        "'otel'): also send prompts, completions, actions and observations as span attributes. "
        "Off: spans carry goals, models, token counts and outcomes only.")
    otel_max_queue_size: int = Field(
        default=2048, ge=1, description="Trace export: spans one process holds for export at "
        "most; past it a running task's spans are dropped (counted in /metrics as "
        "adapt_otel_spans_dropped), never waited for; `adapt export otlp` waits instead.")

    sse_poll_seconds: float = Field(default=0.2, gt=0,
                                    description="How often an SSE stream looks for new events.")
    sse_keepalive_seconds: float = Field(default=15.0, gt=0,
                                         description="SSE keep-alive comment interval.")

    @model_validator(mode="after")
    def _openai_server_kind(self) -> Settings:
        self.openai_server_kind = one_server_kind(self.openai_server_kind, self.guided_decoding)
        return self

    @field_validator("llm_endpoints", mode="before")
    @classmethod
    def _endpoint_urls(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"base_url": v} if isinstance(v, str) else v for v in value]
        return value

    @property
    def model_connections(self) -> int:
        """How many HTTP connections this process's model clients may open
        (``llm_max_connections``, else ``concurrency``, at least 256): a call needs its own
        connection while in flight, so fewer than the tasks in flight makes the surplus wait
        (500 tasks at 1 s ran at 51 % of ideal on 256)."""
        if self.llm_max_connections is not None:
            return self.llm_max_connections
        return max(self.concurrency, MODEL_CONNECTIONS)

    @property
    def embedded(self) -> bool:
        return not self.broker_url

    @property
    def database_url(self) -> str:
        return self.database_url_ or f"sqlite:///{self.data_dir / 'adapt.db'}"

    def resolve_default_model(self) -> tuple[str, str | None]:
        """The default model spec and, when it is the simulator, why."""
        if self.default_model:
            return self.default_model, None
        if self.openai_api_key:
            return OPENAI_DEFAULT_MODEL, None
        return SIM_DEFAULT_MODEL, (
            "no OpenAI key configured and no model given: using the SIMULATED TextCraft model "
            f"({SIM_DEFAULT_MODEL}); set OPENAI_API_KEY or pass --model to use a real LLM"
        )


def get_settings() -> Settings:
    return Settings()
