# The hostpath CSI plugin (a reference plugin for tests and demos): the shaded runnable jar.
# Build from the repository root after `./mvnw -B -pl csi-client,csi-hostpath-plugin -am package -DskipTests`:
#   docker build -f deploy/docker/hostpath-plugin.Dockerfile -t csi-orchestrator/csi-hostpath-plugin:0.1.0-SNAPSHOT .
# Run it privileged and as root: staging and publishing are real bind mounts (util-linux mount/umount).
FROM eclipse-temurin:17-jre-noble

RUN apt-get update \
 && apt-get install -y --no-install-recommends util-linux mount \
 && rm -rf /var/lib/apt/lists/*

COPY csi-hostpath-plugin/target/csi-hostpath-plugin.jar /opt/csi/csi-hostpath-plugin.jar

# Arguments: --endpoint unix:///<plugins-dir>/<plugin-id>/csi.sock --node-id N --state-dir D [...]
ENTRYPOINT ["java", "-jar", "/opt/csi/csi-hostpath-plugin.jar"]
