# One image for every service: api, worker, migrate.
FROM python:3.11-slim
WORKDIR /app
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY pyproject.toml README.md alembic.ini ./
COPY adapt ./adapt
COPY api ./api
COPY workers ./workers
COPY migrations ./migrations
# the otel extra: traces go out once OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/observability.md)
RUN pip install --no-cache-dir -e ".[otel]"
EXPOSE 8000
CMD ["adapt", "serve", "--host", "0.0.0.0"]
