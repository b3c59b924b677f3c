# One Queen node, for the three-node dev cluster of docker-compose.yml (README, "A three-node
# cluster in containers"). It copies a binary built on the host, so build that first:
#
#   cargo build --release --bin queen
#   docker build -t localhost/queen:dev .        # or podman build --format docker ...
#
# The binary links against the host's glibc (and libgcc_s), so build it on bookworm or on a
# system no newer (glibc 2.36 at most); CI builds it on bookworm.
FROM debian:bookworm-slim

# curl for the health check; ca-certificates for anything that speaks TLS out of the container.
RUN apt-get update \
 && apt-get install -y --no-install-recommends curl ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --user-group --home-dir /var/lib/queen --shell /usr/sbin/nologin queen \
 && mkdir -p /var/lib/queen/raft \
 && chown -R queen:queen /var/lib/queen

COPY target/release/queen /usr/local/bin/queen

# Every listener on all of the container's interfaces; docker-compose.yml publishes HTTP and
# Kafka on the host's loopback only, and keeps the raft port inside its network.
ENV QUEEN_RAFT_DIR=/var/lib/queen/raft \
    QUEEN_HTTP_ADDR=0.0.0.0:6632 \
    QUEEN_KAFKA_ADDR=0.0.0.0:9092 \
    QUEEN_RAFT_ADDR=0.0.0.0:7400

USER queen
WORKDIR /var/lib/queen
VOLUME /var/lib/queen/raft
# 6632 HTTP API, 9092 Kafka, 7400 raft (node to node)
EXPOSE 6632 9092 7400

HEALTHCHECK --interval=5s --timeout=3s --start-period=20s --retries=3 \
  CMD curl -fsS -o /dev/null http://127.0.0.1:6632/health || exit 1

ENTRYPOINT ["/usr/local/bin/queen"]
