# The OCC container image: one static binary on an empty base, run as a non-root user.
#
# Nothing is pulled from a registry. `make image` prepares the build context under bin/image
# (the binary built with CGO_ENABLED=0, /etc/passwd and /etc/group naming the user `occ`
# (uid/gid 65532), the host's CA certificates when present, a world-writable /tmp, and an empty
# bin/image-state/ that becomes /var/lib/occ owned by the occ user) and runs:
#
#   docker build -t occ:dev .
#
# .dockerignore sends only bin/image/ and bin/image-state/ to the Engine.
FROM scratch

COPY bin/image/ /
# /var/lib/occ belongs to the occ user, so a volume mounted there (bootstrap key file, the development
# filesystem Configuration and Secret roots) is writable by it.
COPY --chown=65532:65532 bin/image-state/ /var/lib/occ/

USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["/occ"]
CMD ["--help"]

LABEL org.opencontainers.image.title="occ" \
      org.opencontainers.image.description="OCC, the OpenClaw control plane: API, controller worker, operations and client commands" \
      org.opencontainers.image.source="https://github.com/openclaw/occ"
