# syntax=docker/dockerfile:1
# adapt's images, from one file. Two targets:
#   app          the API, `adapt db upgrade` and workers (docker-compose.yml builds it once
#                and runs every service from it); runs as the unprivileged user `adapt`
#   worker-bash  app plus the InterCode-Bash sandbox's packages, for workers that run Bash
#                tasks (docs/deployment.md#intercode-bash-workers); runs as root, which the
#                sandbox's overlay mounts need
# Layers change least-often first: the dependencies (from pyproject.toml alone) are installed
# before adapt's code is copied, so a code change rebuilds only the last layers.

FROM python:3.11-slim AS base
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/adapt PATH=/opt/adapt/bin:$PATH
RUN python -m venv /opt/adapt \
 && useradd --system --uid 10001 --create-home --home-dir /home/adapt --shell /usr/sbin/nologin adapt

# the dependencies: adapt's own, the otel extra (traces go out once
# OTEL_EXPORTER_OTLP_ENDPOINT is set, docs/observability.md) and the build backend
FROM base AS deps
WORKDIR /src
COPY pyproject.toml ./
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb')); \
print('\n'.join(p['project']['dependencies'] + p['project']['optional-dependencies']['otel'] \
+ p['build-system']['requires']))" > requirements.txt \
 && pip install --requirement requirements.txt

FROM deps AS app
COPY README.md alembic.ini ./
COPY adapt ./adapt
COPY api ./api
COPY workers ./workers
COPY migrations ./migrations
RUN pip install --no-deps --no-build-isolation . \
 && rm -rf /src/build
WORKDIR /home/adapt
# the user `adapt` (numeric, so that the runtime needs no passwd lookup to know it is not root)
USER 10001
EXPOSE 8000
CMD ["adapt", "serve", "--host", "0.0.0.0"]

FROM app AS worker-bash
# root on purpose: the sandbox's overlay mounts need it (it drops every capability but the
# file ones before a command runs)
# hadolint ignore=DL3002
USER 0
# The sandbox (bubblewrap; unshare, mount and prlimit come with util-linux and mount) and the
# tools of InterCode's nl2bash image: the same list as IMAGE_PACKAGES in
# adapt/envs/intercode_bash/layers.py and .ci/run. Running the sandbox needs root and
# namespaces in the container: see docs/deployment.md (InterCode-Bash workers).
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      bubblewrap util-linux mount \
      bash python3 psmisc bsdmainutils cron imagemagick dnsutils git tree net-tools \
      iputils-ping coreutils curl cpio jq \
 && rm -rf /var/lib/apt/lists/*
CMD ["adapt", "worker"]
