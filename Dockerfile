# syntax=docker/dockerfile:1
# Multi-stage build: dependencies are compiled in their own layer (cargo-chef), so editing
# the source rebuilds only Switchboard itself. The image ships the `dist` profile (Cargo.toml:
# whole-program LTO, stripped), which links far slower than the ordinary release build. The runtime image is Debian slim with only
# CA certificates (every TLS client is rustls, so no OpenSSL is needed) and the time zone
# database that scheduled tasks read their zones from.

FROM rust:1-bookworm AS chef
RUN cargo install cargo-chef --locked
WORKDIR /src

FROM chef AS planner
COPY . .
RUN cargo chef prepare --recipe-path recipe.json

FROM chef AS builder
COPY --from=planner /src/recipe.json recipe.json
RUN cargo chef cook --profile dist --recipe-path recipe.json
COPY . .
# The commit `switchboard --version` names: the build context has no .git, so it comes in
# as a build argument (`docker build --build-arg SWITCHBOARD_COMMIT=$(git rev-parse --short
# HEAD) .`), else `unknown`. Declared after the dependencies' layer, which it leaves cached.
ARG SWITCHBOARD_COMMIT=unknown
RUN SWITCHBOARD_COMMIT="$SWITCHBOARD_COMMIT" cargo build --profile dist --locked --bin switchboard

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin switchboard \
    && mkdir -p /data /config \
    && chown switchboard /data
COPY --from=builder /src/target/dist/switchboard /usr/local/bin/switchboard
# The built-in config, outside /config: a mounted ./config directory (docker-compose.yml)
# cannot hide it. The gateway reads /config/switchboard.toml when that file exists and this
# one otherwise (SWITCHBOARD_CONFIG, SWITCHBOARD_FALLBACK_CONFIG below).
COPY config/switchboard.example.toml /etc/switchboard/switchboard.toml
# Tool processes are sandboxed by re-executing this same binary as their supervisor; it needs
# no capability and works under Docker's default seccomp profile (see README, Sandboxed tools).
USER switchboard
WORKDIR /data
VOLUME ["/data"]
# No web chat token needed: without SWITCHBOARD_WEB_TOKEN the gateway generates one into
# /data/web/web.token at first start; `docker compose exec switchboard switchboard web-token`
# prints the link with it.
ENV SWITCHBOARD_CONFIG=/config/switchboard.toml \
    SWITCHBOARD_FALLBACK_CONFIG=/etc/switchboard/switchboard.toml \
    SWITCHBOARD__GATEWAY__LISTEN=0.0.0.0:8080 \
    SWITCHBOARD__GATEWAY__DATABASE_URL=sqlite:///data/switchboard.db \
    SWITCHBOARD__GATEWAY__DATA_DIR=/data
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["switchboard", "healthcheck"]
ENTRYPOINT ["switchboard"]
CMD ["run"]
