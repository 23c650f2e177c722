package io.csiorchestrator.claims.messaging;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * The {@code claim-requested} channel's value deserializer: UTF-8 text with plain mount flags blanked
 * ({@link PlainMountFlagsRedactor}), so a request that breaks the contract is dead-lettered without them.
 */
public final class ClaimRequestedDeserializer implements Deserializer<String> {

    @Override
    public String deserialize(String topic, byte[] data) {
        return data == null ? null : PlainMountFlagsRedactor.redact(new String(data, StandardCharsets.UTF_8));
    }
}
