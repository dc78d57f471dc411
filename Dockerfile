# One image for every service: api, worker, migrate.
FROM python:3.11-slim
WORKDIR /app
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# InterCode-Bash (docs/intercode-bash.md): the sandbox (bubblewrap; unshare, mount and prlimit
# come with util-linux and mount) and the tools of InterCode's nl2bash image, the same list as
# IMAGE_PACKAGES in adapt/envs/intercode_bash/layers.py and .ci/run. Running the sandbox needs
# namespaces in the container: see docs/deployment.md (InterCode-Bash workers).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      bubblewrap util-linux mount \
      bash python3 psmisc bsdmainutils cron imagemagick dnsutils git tree net-tools \
      iputils-ping coreutils curl cpio jq \
 && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md alembic.ini ./
COPY adapt ./adapt
COPY api ./api
COPY workers ./workers
COPY migrations ./migrations
# the otel extra: traces go out once OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/observability.md)
RUN pip install --no-cache-dir -e ".[otel]"
EXPOSE 8000
CMD ["adapt", "serve", "--host", "0.0.0.0"]
