package io.csiorchestrator.cli;

import java.nio.file.Files;
import java.nio.file.Path;

import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.KafkaClientSecurity;

/**
 * How the CLI's Kafka clients ({@code volume claim}, {@code events}, {@code bench}, {@code chaos}) authenticate:
 * {@code CSI_KAFKA_USERNAME} / {@code _PASSWORD_FILE} / {@code _TRUSTSTORE} (or the {@code csi.kafka.*} system
 * properties) when set; else the operator credential {@code ./csi up} wrote under {@code .csi/up/} (principal
 * {@value KafkaAccess#OPERATOR}); else PLAINTEXT.
 */
final class CliKafkaSecurity {

    /** Where {@code ./csi up} keeps the Kafka credentials it issued, relative to its work directory. */
    static final String CREDENTIALS_DIR = "kafka-credentials";
    /** The CA certificate of {@code ./csi up}'s broker, relative to its work directory. */
    static final String TRUSTSTORE = "kafka/security/ca.pem";

    private CliKafkaSecurity() {
    }

    static KafkaClientSecurity resolve() {
        return resolve(Path.of(".csi", "up"));
    }

    static KafkaClientSecurity resolve(Path upWorkDir) {
        KafkaClientSecurity configured = KafkaClientSecurity.fromEnvironment();
        if (configured.secured()) {
            return configured;
        }
        Path password = passwordFile(upWorkDir, KafkaAccess.OPERATOR);
        Path truststore = upWorkDir.resolve(TRUSTSTORE);
        if (Files.isRegularFile(password) && Files.isRegularFile(truststore)) {
            return KafkaClientSecurity.scram(KafkaAccess.OPERATOR, password, truststore);
        }
        return configured;
    }

    /** The password file of {@code user} under {@code upWorkDir}. */
    static Path passwordFile(Path upWorkDir, String user) {
        return upWorkDir.resolve(CREDENTIALS_DIR).resolve(user + ".password");
    }
}
