# Headwater server image.
#   docker build -t headwater .
#   docker run -p 5000:5000 -e HEADWATER_DATABASE_URL=postgresql://user:pass@host:5432/headwater headwater
# Without HEADWATER_DATABASE_URL the server starts its embedded PostgreSQL (from the pgserver
# package) with data in /data; mount a volume there to keep it. compose.yaml runs it with a
# PostgreSQL 16 container instead.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

WORKDIR /build

# Dependencies first, against a placeholder package, so code changes do not reinstall them. The
# kafka extra lets the same image run `headwater consume` (compose.yaml's kafka profile).
COPY pyproject.toml README.md ./
RUN mkdir -p backend/headwater \
    && touch backend/headwater/__init__.py \
    && pip install '.[kafka]' \
    && pip uninstall -y headwater

COPY backend ./backend
RUN pip install --no-deps . \
    && cd / \
    && rm -rf /build

RUN groupadd --system --gid 10001 headwater \
    && useradd --system --uid 10001 --gid headwater --create-home --home-dir /home/headwater \
       --shell /usr/sbin/nologin headwater \
    && install -d -o headwater -g headwater -m 0700 /data

ENV HEADWATER_DATA_DIR=/data
WORKDIR /home/headwater
USER 10001:10001
EXPOSE 5000

CMD ["headwater", "serve", "--host", "0.0.0.0"]
