# One image for every service: api, worker, migrate.
FROM python:3.11-slim
WORKDIR /app
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY pyproject.toml README.md alembic.ini ./
COPY adapt ./adapt
COPY api ./api
COPY workers ./workers
COPY migrations ./migrations
RUN pip install --no-cache-dir -e .
EXPOSE 8000
CMD ["adapt", "serve", "--host", "0.0.0.0"]
