package io.csiorchestrator.cli;

import java.nio.file.Files;
import java.nio.file.Path;

import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.KafkaClientSecurity;

/**
 * How the CLI's Kafka clients ({@code volume claim}, {@code events}, {@code bench}, {@code chaos}) authenticate:
 * {@code CSI_KAFKA_USERNAME} / {@code _PASSWORD_FILE} / {@code _TRUSTSTORE} (or the {@code csi.kafka.*} system
 * properties) when set; else the operator credential {@code ./csi up} wrote in its work dir ({@code .csi/up/} or
 * {@code --work-dir}; principal
 * {@value KafkaAccess#OPERATOR}); else PLAINTEXT.
 */
final class CliKafkaSecurity {

    /** Where {@code ./csi up} keeps the Kafka credentials it issued, relative to its work directory. */
    static final String CREDENTIALS_DIR = "kafka-credentials";
    /** The CA certificate of {@code ./csi up}'s broker, relative to its work directory. */
    static final String TRUSTSTORE = "kafka/security/ca.pem";

    private static volatile Path workDir = Path.of(".csi", "up");
    private static volatile boolean byCluster;

    private CliKafkaSecurity() {
    }

    /** The work dir of {@code ./csi up} whose credentials the CLI uses (Main sets it from {@code --work-dir}). */
    static void useWorkDir(Path dir) {
        workDir = dir;
        byCluster = false;
    }

    /** A {@link Cluster} of this process issued the credentials of {@code dir}: they are this process's from now on. */
    static void useClusterWorkDir(Path dir) {
        workDir = dir;
        byCluster = true;
    }

    /** Whether the work dir was set by a {@link Cluster} this process started (see {@link #useClusterWorkDir}). */
    static boolean setByCluster() {
        return byCluster;
    }

    static KafkaClientSecurity resolve() {
        return resolve(workDir);
    }

    static KafkaClientSecurity resolve(Path upWorkDir) {
        return resolve(upWorkDir, KafkaAccess.OPERATOR);
    }

    /**
     * {@code ./csi bench}'s settings: as {@link #resolve()}, but as {@value KafkaAccess#BENCH} (which may also read
     * node-commands and mount-done, and owns the probe topic) when the credential comes from {@code .csi/up/}.
     */
    static KafkaClientSecurity bench() {
        return resolve(workDir, KafkaAccess.BENCH);
    }

    private static KafkaClientSecurity resolve(Path upWorkDir, String user) {
        KafkaClientSecurity configured = KafkaClientSecurity.fromEnvironment();
        if (configured.secured()) {
            return configured;
        }
        Path password = passwordFile(upWorkDir, user);
        Path truststore = upWorkDir.resolve(TRUSTSTORE);
        if (Files.isRegularFile(password) && Files.isRegularFile(truststore)) {
            return KafkaClientSecurity.scram(user, password, truststore);
        }
        return configured;
    }

    /** The Kafka token file of node principal {@code owner} under {@code upWorkDir} ({@code ./csi up} issues it). */
    static Path tokenFile(Path upWorkDir, String owner) {
        return upWorkDir.resolve(CREDENTIALS_DIR).resolve(owner + ".token");
    }

    /** The password file of {@code user} under {@code upWorkDir}. */
    static Path passwordFile(Path upWorkDir, String user) {
        return upWorkDir.resolve(CREDENTIALS_DIR).resolve(user + ".password");
    }
}
