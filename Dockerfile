# plantstub as a CI sidecar: `docker build -t plantstub .` then `docker run -p 4010:4010 plantstub`.
FROM python:3.12-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY plantstub ./plantstub
# A virtual environment keeps the install self-contained and copyable into the runtime stage.
RUN python -m venv /opt/plantstub \
 && /opt/plantstub/bin/pip install --no-cache-dir --disable-pip-version-check . \
 && /opt/plantstub/bin/pip uninstall --yes pip

FROM python:3.12-slim
LABEL org.opencontainers.image.title="plantstub" \
      org.opencontainers.image.description="Contract-checked stub of the Plant Store API for integration tests" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="0.1.0"
RUN useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin plantstub
COPY --from=build /opt/plantstub /opt/plantstub
COPY scenarios /scenarios
ENV PATH="/opt/plantstub/bin:${PATH}" \
    PYTHONUNBUFFERED=1 \
    PLANTSTUB_HOST=0.0.0.0 \
    PLANTSTUB_PORT=4010 \
    PLANTSTUB_SCENARIOS=/scenarios \
    PLANTSTUB_SPEC_CACHE=/tmp/plantstub-spec-cache \
    PLANTSTUB_LOG_FORMAT=text
WORKDIR /tmp
USER 10001
EXPOSE 4010
HEALTHCHECK --interval=5s --timeout=3s --start-period=5s --retries=3 CMD ["plantstub", "health"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["plantstub"]
CMD ["serve"]
