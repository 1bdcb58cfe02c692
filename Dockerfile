# The persistent Durable Task Scheduler emulator, from its own distribution (dtscale-emulator) alone: gRPC
# TaskHubSidecarService on 0.0.0.0:8080, its dashboard on 8082, state in /data/durabletask-emulator.db (mount a
# volume on /data to keep it across containers). Build from the repository root: docker build -t dts-emulator .
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY emulator ./emulator
RUN pip install "./emulator[dashboard,otlp]" \
    && rm -rf /src \
    && useradd --create-home --uid 10001 emulator \
    && mkdir /data \
    && chown emulator:emulator /data

USER emulator
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080 8082

# Both ports bind 0.0.0.0 inside the container (so that published ports reach them): the dashboard on 8082 answers
# whoever reaches the published port, and can terminate and purge instances. With the TLS variables below it serves
# HTTPS with the same certificate (add --dashboard-insecure-http to the command for plain HTTP), with the token it
# asks for the token; it logs a warning at start when it has no token, or a token but plain HTTP. Without both,
# publish it to this machine only (docker run -p 127.0.0.1:8082:8082 ...) or add --no-dashboard to the command.
# Configure TLS and the token through the environment, so the health check (which reads the same variables)
# probes with the settings the emulator serves with:
#   DTS_EMULATOR_TLS_CERT, DTS_EMULATOR_TLS_KEY    PEM files (mounted, e.g. under /run/secrets)
#   DTS_EMULATOR_AUTH_TOKEN_FILE                    file holding the bearer token (or DTS_EMULATOR_AUTH_TOKEN)
#   DTS_EMULATOR_TLS_CA                              roots the probe trusts when the certificate is not self-signed
#   DTS_EMULATOR_TLS_SERVER_NAME                     name the probe checks when the certificate does not cover 127.0.0.1
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
    CMD ["python", "-m", "dtscale_emulator.ops.healthcheck", "127.0.0.1:8080"]

# DTS_EMULATOR_OTLP_ENDPOINT (e.g. http://jaeger:4317) sends the emulator's own spans to that OTLP/gRPC collector.
ENTRYPOINT ["durabletask-emulator"]
CMD ["--host", "0.0.0.0", "--port", "8080", "--db", "/data/durabletask-emulator.db"]
