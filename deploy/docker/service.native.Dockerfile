# Native image of one Quarkus service. Needs a native executable in <module>/target/*-runner, built
# with `./mvnw -B package -Dquarkus.native.enabled=true -Dquarkus.native.container-build=true -pl <module> -am`
# (see deploy/README.md: a -Pnative profile and the reflection registrations are not in the poms yet).
#   docker build -f deploy/docker/service.native.Dockerfile --build-arg MODULE=claim-service \
#     -t csi-orchestrator/claim-service:0.1.0-SNAPSHOT-native .
FROM registry.access.redhat.com/ubi9/ubi-minimal:9.6

ARG MODULE
# node-mount-worker's fence guard (README "The guard") is a bash script using util-linux (setsid, flock, umount).
RUN if [ "$MODULE" = "node-mount-worker" ]; then microdnf install -y util-linux && microdnf clean all; fi
WORKDIR /work/
RUN chown 1001:root /work && chmod g+rwX /work
COPY --chown=1001:root ${MODULE}/target/*-runner /work/application

EXPOSE 8081 8082 8083
USER 1001
ENTRYPOINT ["./application", "-Dquarkus.http.host=0.0.0.0"]
