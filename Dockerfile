# Build: docker build --build-arg VERSION=1.4.0 -t phaseflow .
# The image is built without .git, so the version comes from the build argument
# (phaseflow --version and phaseflow_build_info show it).
FROM golang:1.26 AS build
ARG VERSION=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=${VERSION}" -o /out/phaseflow ./cmd/phaseflow && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/phaseflow /phaseflow
# The data folder (SQLite, generated JWT secret) must be writable by the nonroot user; a
# named volume mounted here takes this ownership on first use.
COPY --from=build --chown=65532:65532 /out/data /data
ENV PHASEFLOW_ADDR=0.0.0.0:8080 PHASEFLOW_DATA_DIR=/data
VOLUME /data
EXPOSE 8080
# The image has no shell: the binary probes its own /readyz (exit 0 when ready).
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["/phaseflow", "healthcheck"]
ENTRYPOINT ["/phaseflow"]
CMD ["serve"]
