# JVM image of one Quarkus service (claim-service, plugin-registry-service, node-mount-worker).
# Build from the repository root after `./mvnw -B package -DskipTests`:
#   docker build -f deploy/docker/service.jvm.Dockerfile --build-arg MODULE=claim-service \
#     -t csi-orchestrator/claim-service:0.1.0-SNAPSHOT .
FROM registry.access.redhat.com/ubi9/openjdk-17-runtime:1.23

ARG MODULE
# node-mount-worker's fence guard (README "The guard") is a bash script using util-linux (setsid, flock, umount).
USER root
RUN if [ "$MODULE" = "node-mount-worker" ]; then microdnf install -y util-linux && microdnf clean all; fi
ENV LANGUAGE='en_US:en' \
    JAVA_APP_JAR=/deployments/quarkus-run.jar \
    JAVA_OPTS_APPEND="-Djava.util.logging.manager=org.jboss.logmanager.LogManager"

# The fast-jar layout, dependencies first so they stay a cached layer.
COPY --chown=185 ${MODULE}/target/quarkus-app/lib/ /deployments/lib/
COPY --chown=185 ${MODULE}/target/quarkus-app/*.jar /deployments/
COPY --chown=185 ${MODULE}/target/quarkus-app/app/ /deployments/app/
COPY --chown=185 ${MODULE}/target/quarkus-app/quarkus/ /deployments/quarkus/

# claim-service 8081, plugin-registry-service 8082, node-mount-worker 8083 (quarkus.http.port).
EXPOSE 8081 8082 8083
# The central services run as the image's unprivileged user; the node worker's container is run
# privileged and as root (compose: user/privileged, Kubernetes: securityContext) for its mounts.
USER 185
ENTRYPOINT ["/opt/jboss/container/java/run/run-java.sh"]
