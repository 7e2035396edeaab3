# The wirebench binary in a small image: built on Debian bookworm with the locked
# dependencies, run on bookworm-slim (the same glibc; the binary links only libc, libm and
# libgcc_s) as a fixed non-root user. deploy/k8s/ runs it; deploy/k8s/validate.py checks
# this file against the manifests.
#   docker build -t wirebench:0.1.0 .
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p wirebench

FROM debian:bookworm-slim
COPY --from=build /src/target/release/wirebench /usr/local/bin/wirebench
# The user the manifests run as (runAsUser 10001); no account is needed for a numeric one.
USER 10001:10001
ENTRYPOINT ["/usr/local/bin/wirebench"]
CMD ["--help"]
